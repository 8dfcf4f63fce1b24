/* bind_linear.c: Python bindings for the linear family (see bind_norm.c for the pattern). */
#include "bind.h"

PyMethodDef gb_linear_methods[] = {
    {NULL, NULL, 0, NULL}};
