/* bind_bench.c: Python bindings for the bench family (see bind_norm.c for the pattern). */
#include "bind.h"

PyMethodDef gb_bench_methods[] = {
    {NULL, NULL, 0, NULL}};
