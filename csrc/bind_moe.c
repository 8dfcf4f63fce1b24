/* bind_moe.c: Python bindings for the moe family (see bind_norm.c for the pattern). */
#include "bind.h"

PyMethodDef gb_moe_methods[] = {
    {NULL, NULL, 0, NULL}};
