/* bind_quant.c: Python bindings for the quant family (see bind_norm.c for the pattern). */
#include "bind.h"

PyMethodDef gb_quant_methods[] = {
    {NULL, NULL, 0, NULL}};
