/*
 * int64_view.h: reading int64 arrays from Python in the compiled modules of planners
 * (_greedy.c, _telamalloc.c include it; C99, CPython buffer protocol only).
 *
 * Include after <Python.h> and <string.h>. The sweep provenance
 * (experiments/sweep/provenance.py) counts the local headers a module's .c file includes as
 * part of that module's code.
 */
#ifndef MEMPLAN_INT64_VIEW_H
#define MEMPLAN_INT64_VIEW_H

/* A C-contiguous one-dimensional buffer of int64 items (numpy int64 arrays, array('q'), ...),
 * writable when asked. *n < 0: any length, set to the length found; else the length must be *n.
 * Returns 0, or -1 with TypeError (not a C-contiguous 1-d int64 buffer) or ValueError (wrong
 * length) set, `what` naming the argument; on success the caller releases the view. */
static int get_i64_view(PyObject *obj, Py_buffer *view, int writable, const char *what,
                        Py_ssize_t *n) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) != 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: expected a C-contiguous %sint64 array", what,
                     writable ? "writable " : "");
        return -1;
    }
    const char *f = view->format ? view->format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    if (view->itemsize != 8 || view->ndim > 1 || !(strcmp(f, "q") == 0 || strcmp(f, "l") == 0)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a 1-d int64 array", what);
        PyBuffer_Release(view);
        return -1;
    }
    Py_ssize_t len = view->len / 8;
    if (*n < 0) *n = len;
    else if (len != *n) {
        PyErr_Format(PyExc_ValueError, "%s: length %zd, expected %zd", what, len, *n);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

#endif
