/* bind_rope.c: Python bindings for the rope family (see bind_norm.c for the pattern). */
#include "bind.h"

PyMethodDef gb_rope_methods[] = {
    {NULL, NULL, 0, NULL}};
