/* Occurrences of one byte in a buffer: the newline count of file_read's line index.
 *
 * NumPy's compare-then-count writes a mask and reads it back (about 40 us per 256 KiB block
 * here); `wc -l`, the floor, counts in registers. This does the same with SSE2, which every
 * x86-64 CPU has: compare 64 bytes, subtract the 0/-1 masks into byte counters, and fold the
 * counters with a sum of absolute differences before they can wrap (255 rounds). Other CPUs
 * take the plain loop. The GIL is released: two threads count two blocks at once.
 *
 * Optional: the build falls back to NumPy when no compiler is present (_lines.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static Py_ssize_t
count_byte(const unsigned char *p, Py_ssize_t n, unsigned char c)
{
    Py_ssize_t total = 0, i = 0;
#if defined(__SSE2__)
    const __m128i needle = _mm_set1_epi8((char)c);
    const __m128i zero = _mm_setzero_si128();
    while (n - i >= 64) {
        __m128i a0 = zero, a1 = zero, a2 = zero, a3 = zero;
        Py_ssize_t rounds = (n - i) / 64;
        if (rounds > 255)
            rounds = 255; /* a byte counter holds 255 matches */
        for (Py_ssize_t r = 0; r < rounds; r++, i += 64) {
            const __m128i *q = (const __m128i *)(p + i);
            a0 = _mm_sub_epi8(a0, _mm_cmpeq_epi8(_mm_loadu_si128(q), needle));
            a1 = _mm_sub_epi8(a1, _mm_cmpeq_epi8(_mm_loadu_si128(q + 1), needle));
            a2 = _mm_sub_epi8(a2, _mm_cmpeq_epi8(_mm_loadu_si128(q + 2), needle));
            a3 = _mm_sub_epi8(a3, _mm_cmpeq_epi8(_mm_loadu_si128(q + 3), needle));
        }
        __m128i s = _mm_add_epi64(_mm_add_epi64(_mm_sad_epu8(a0, zero), _mm_sad_epu8(a1, zero)),
                                  _mm_add_epi64(_mm_sad_epu8(a2, zero), _mm_sad_epu8(a3, zero)));
        total += _mm_cvtsi128_si32(s) + _mm_cvtsi128_si32(_mm_unpackhi_epi64(s, s));
    }
#endif
    for (; i < n; i++)
        total += p[i] == c;
    return total;
}

static PyObject *
count(PyObject *module, PyObject *args)
{
    Py_buffer view;
    int byte;
    if (!PyArg_ParseTuple(args, "y*i:count", &view, &byte))
        return NULL;
    if (byte < 0 || byte > 255) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_ValueError, "byte must be in 0..255, not %d", byte);
        return NULL;
    }
    Py_ssize_t total;
    Py_BEGIN_ALLOW_THREADS
    total = count_byte((const unsigned char *)view.buf, view.len, (unsigned char)byte);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(total);
}

static PyMethodDef methods[] = {
    {"count", count, METH_VARARGS,
     "count(buffer, byte, /) -> int\n\nHow many times byte (0..255) occurs in buffer."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_bytecount", "One byte counted in a buffer, in C.", 0, methods,
};

PyMODINIT_FUNC
PyInit__bytecount(void)
{
    return PyModule_Create(&module);
}
