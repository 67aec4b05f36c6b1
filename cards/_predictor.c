/* PNG predictors undone, row by row: the rows of an xref stream (PDF 1.5, Predictor >= 10).
 *
 * The PDF probe looks up a handful of rows, often near the end of a stream of thousands, and
 * every Up row builds on the one above: in Python each lookup summed its columns over all the
 * rows before it. Undoing every row once here costs about a microsecond per thousand rows, and
 * a lookup is then a slice. One byte per pixel (/Colors 1, /BitsPerComponent 8), as in xref
 * streams; the filter types are those of PNG (None, Sub, Up, Average, Paeth).
 *
 * Optional: without a compiler the probe sums the columns in Python (_pdfxref.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Undo `rows` rows of `columns` bytes, each after its filter byte; `up` is the decoded row
 * above the first. `out` has 16 bytes of slack past its rows. Returns -1, or the index of the
 * first row with an unknown filter type. */
static Py_ssize_t
undo_rows(const unsigned char *in, Py_ssize_t rows, Py_ssize_t columns, const unsigned char *up,
          unsigned char *out)
{
    const unsigned char *const end = in + rows * (columns + 1);
    for (Py_ssize_t r = 0; r < rows; r++) {
        const unsigned char kind = in[0];
#if defined(__SSE2__)
        /* A run of Up rows (nearly every row of an xref stream) with the row kept in a
         * register: 16 lanes added at once, the lanes past `columns` ignored. Loads stay in
         * the input, and stores in `out` and its slack. */
        if (kind == 2 && columns <= 16 && end - in >= 17) {
            unsigned char first[16] = {0};
            memcpy(first, up, (size_t)columns);
            __m128i row = _mm_loadu_si128((const __m128i *)first);
            while (r < rows && in[0] == 2 && end - in >= 17) {
                row = _mm_add_epi8(row, _mm_loadu_si128((const __m128i *)(in + 1)));
                _mm_storeu_si128((__m128i *)out, row);
                up = out;
                out += columns;
                in += columns + 1;
                r++;
            }
            r--; /* the for loop's increment */
            continue;
        }
#endif
        const unsigned char *raw = in + 1;
        unsigned char *cur = out;
        switch (kind) {
        case 0:
            memcpy(cur, raw, (size_t)columns);
            break;
        case 1:
            cur[0] = raw[0];
            for (Py_ssize_t i = 1; i < columns; i++)
                cur[i] = (unsigned char)(raw[i] + cur[i - 1]);
            break;
        case 2:
            for (Py_ssize_t i = 0; i < columns; i++)
                cur[i] = (unsigned char)(raw[i] + up[i]);
            break;
        case 3:
            cur[0] = (unsigned char)(raw[0] + (up[0] >> 1));
            for (Py_ssize_t i = 1; i < columns; i++)
                cur[i] = (unsigned char)(raw[i] + ((cur[i - 1] + up[i]) >> 1));
            break;
        case 4:
            for (Py_ssize_t i = 0; i < columns; i++) {
                const int left = i ? cur[i - 1] : 0, above = up[i], corner = i ? up[i - 1] : 0;
                const int p = left + above - corner;
                const int pa = abs(p - left), pb = abs(p - above), pc = abs(p - corner);
                const int pred = (pa <= pb && pa <= pc) ? left : (pb <= pc ? above : corner);
                cur[i] = (unsigned char)(raw[i] + pred);
            }
            break;
        default:
            return r;
        }
        up = cur;
        out += columns;
        in += columns + 1;
    }
    return -1;
}

static PyObject *
undo(PyObject *module, PyObject *args)
{
    Py_buffer data, above;
    Py_ssize_t columns;
    if (!PyArg_ParseTuple(args, "y*ny*:undo", &data, &columns, &above))
        return NULL;
    PyObject *out = NULL;
    if (columns < 1 || above.len != columns) {
        PyErr_Format(PyExc_ValueError,
                     "columns must be at least 1 and the row above that long (%zd, %zd bytes)",
                     columns, above.len);
        goto done;
    }
    if (data.len % (columns + 1)) {
        PyErr_Format(PyExc_ValueError, "%zd bytes are not whole rows of %zd columns", data.len,
                     columns);
        goto done;
    }
    const Py_ssize_t rows = data.len / (columns + 1);
    out = PyBytes_FromStringAndSize(NULL, rows * columns + 16); /* slack for 16-byte stores */
    if (out == NULL)
        goto done;
    Py_ssize_t bad;
    Py_BEGIN_ALLOW_THREADS
    bad = undo_rows((const unsigned char *)data.buf, rows, columns,
                    (const unsigned char *)above.buf, (unsigned char *)PyBytes_AS_STRING(out));
    Py_END_ALLOW_THREADS
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "unknown PNG predictor row type %d in row %zd",
                     ((const unsigned char *)data.buf)[bad * (columns + 1)], bad);
        Py_CLEAR(out);
    } else {
        _PyBytes_Resize(&out, rows * columns); /* the slack dropped; NULL if that failed */
    }
done:
    PyBuffer_Release(&data);
    PyBuffer_Release(&above);
    return out;
}

static PyMethodDef methods[] = {
    {"undo", undo, METH_VARARGS,
     "undo(data, columns, above, /) -> bytes\n\n"
     "The rows of data (each a PNG filter byte and columns bytes) with their predictors\n"
     "undone; above is the decoded row before the first (zeros at a stream's start).\n"
     "ValueError names the first row of an unknown filter type."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_predictor", "PNG predictors of xref streams undone, in C.", 0,
    methods,
};

PyMODINIT_FUNC
PyInit__predictor(void)
{
    return PyModule_Create(&module);
}
