/* The PDF parser's fast path for simple dictionaries, in C: `simple_dict` of _pdfobj.py.
 *
 * The probe reads a handful of dictionaries (the xref stream's, an object stream's, the
 * catalog, the page tree root), and in Python each entry is a regex match and a few calls:
 * a third of the probe's time. This reads the same syntax byte by byte and must give the same
 * answer: the same values of the same types, the same end offset, and None (decline) where
 * the Python version declines. Python's own int() and float() convert the numbers, so their
 * values cannot differ; tests/cards/test_pdf_simple_dict.py holds the two side by side.
 *
 * The syntax: keys are names without # escapes; values are references, numbers, names
 * without escapes, true, false, null, hex strings without spaces, literal strings without
 * escapes or parentheses, arrays of those, and dictionaries of all that two levels down.
 * A token is taken only when a delimiter follows it inside the buffer.
 *
 * Optional: without a compiler the Python version reads (slower, same answers).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define SIMPLE_DEPTH 3     /* _SIMPLE_DEPTH: dictionaries inside dictionaries */
#define LAZY_ARRAY_BYTES 256 /* _LAZY_ARRAY_BYTES: longer plain arrays stay text */

/* The classes of _pdfobj.py the values are made of, passed with every call: never kept here,
 * since a second import of _pdfobj (a test may import cards._pdfobj beside
 * leanreplay.cards._pdfobj) would have replaced them under the first. */
typedef struct {
    PyObject *name, *ref, *plain_array;
} Classes;

/* Byte classes, one table lookup each: whitespace, delimiters (whitespace and ()<>[]{}/%),
 * and the bytes of a plain array (digits, whitespace, R . + -), as _pdfobj.py spells them. */
enum { WS = 1, DELIM = 2, PLAIN = 4 };
static unsigned char classes[256];

static void
fill_classes(void)
{
    const char *ws = " \t\n\r\f", *delims = "()<>[]{}/%", *plain = "0123456789R.+-";
    for (const char *c = ws; *c; c++)
        classes[(unsigned char)*c] |= WS | DELIM | PLAIN;
    classes[0] |= WS | DELIM | PLAIN;
    for (const char *c = delims; *c; c++)
        classes[(unsigned char)*c] |= DELIM;
    for (const char *c = plain; *c; c++)
        classes[(unsigned char)*c] |= PLAIN;
}

static inline int
is_ws(unsigned char c)
{
    return classes[c] & WS;
}

static inline int
is_delim(unsigned char c)
{
    return classes[c] & DELIM;
}

static int
is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static int
hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* What follows a token: a delimiter, inside the buffer (the regex's lookahead). */
static int
ends(const unsigned char *b, Py_ssize_t at, Py_ssize_t n)
{
    return at < n && is_delim(b[at]);
}

static Py_ssize_t
skip_ws(const unsigned char *b, Py_ssize_t at, Py_ssize_t n)
{
    while (at < n && is_ws(b[at]))
        at++;
    return at;
}

static Py_ssize_t
skip_digits(const unsigned char *b, Py_ssize_t at, Py_ssize_t n)
{
    while (at < n && is_digit(b[at]))
        at++;
    return at;
}

/* A name's characters after its slash: up to a delimiter or '#'. */
static Py_ssize_t
name_end(const unsigned char *b, Py_ssize_t at, Py_ssize_t n)
{
    while (at < n && !is_delim(b[at]) && b[at] != '#')
        at++;
    return at;
}

static PyObject *
make_name(const Classes *c, const unsigned char *b, Py_ssize_t start, Py_ssize_t end)
{
    PyObject *text = PyUnicode_DecodeLatin1((const char *)b + start, end - start, NULL);
    if (text == NULL)
        return NULL;
    PyObject *name = PyObject_CallOneArg(c->name, text);
    Py_DECREF(text);
    return name;
}

/* int() or float() of the bytes, as Python converts them. */
static PyObject *
make_number(const unsigned char *b, Py_ssize_t start, Py_ssize_t end, int is_float)
{
    PyObject *text = PyBytes_FromStringAndSize((const char *)b + start, end - start);
    if (text == NULL)
        return NULL;
    PyObject *value = is_float ? PyFloat_FromString(text) : PyNumber_Long(text);
    Py_DECREF(text);
    return value;
}

/* Not this token (decline), an error, or a value. */
#define NO_MATCH ((PyObject *)1)

/* One value of the simple syntax at `*at` (no arrays or dictionaries), in the regex's order
 * of alternatives: a reference, a number, a name, a keyword, a hex string, a literal string.
 * On a match `*at` moves past it. */
static PyObject *
scalar(const Classes *c, const unsigned char *b, Py_ssize_t *at, Py_ssize_t n)
{
    Py_ssize_t p = *at;
    /* A reference: digits, whitespace, digits, whitespace, R, a delimiter. */
    if (p < n && is_digit(b[p])) {
        const Py_ssize_t num_end = skip_digits(b, p, n), gen = skip_ws(b, num_end, n);
        if (gen > num_end && gen < n && is_digit(b[gen])) {
            const Py_ssize_t gen_end = skip_digits(b, gen, n), q = skip_ws(b, gen_end, n);
            if (q > gen_end && q < n && b[q] == 'R' && ends(b, q + 1, n)) {
                PyObject *num = make_number(b, p, num_end, 0);
                if (num == NULL)
                    return NULL;
                PyObject *g = make_number(b, gen, gen_end, 0);
                if (g == NULL) {
                    Py_DECREF(num);
                    return NULL;
                }
                PyObject *ref = PyObject_CallFunctionObjArgs(c->ref, num, g, NULL);
                Py_DECREF(num);
                Py_DECREF(g);
                *at = q + 1;
                return ref;
            }
        }
    }
    /* A number: a sign, then digits with an optional fraction, or a dot and digits. */
    {
        Py_ssize_t q = p;
        if (q < n && (b[q] == '+' || b[q] == '-'))
            q++;
        int ok = 0, is_float = 0;
        if (q < n && is_digit(b[q])) {
            q = skip_digits(b, q, n);
            if (q < n && b[q] == '.') {
                is_float = 1;
                q = skip_digits(b, q + 1, n);
            }
            ok = 1;
        } else if (q + 1 < n && b[q] == '.' && is_digit(b[q + 1])) {
            is_float = 1;
            q = skip_digits(b, q + 1, n);
            ok = 1;
        }
        if (ok && ends(b, q, n)) {
            PyObject *value = make_number(b, p, q, is_float);
            if (value != NULL)
                *at = q;
            return value;
        }
    }
    if (p >= n)
        return NO_MATCH;
    /* A name without escapes. */
    if (b[p] == '/') {
        Py_ssize_t q = name_end(b, p + 1, n);
        if (!ends(b, q, n))
            return NO_MATCH; /* a '#', or the buffer's end: no other alternative starts so */
        PyObject *name = make_name(c, b, p + 1, q);
        if (name != NULL)
            *at = q;
        return name;
    }
    /* true, false, null. */
    static const struct {
        const char *word;
        Py_ssize_t len;
    } keywords[] = {{"true", 4}, {"false", 5}, {"null", 4}};
    for (int k = 0; k < 3; k++) {
        Py_ssize_t len = keywords[k].len;
        if (n - p >= len && memcmp(b + p, keywords[k].word, (size_t)len) == 0 &&
            ends(b, p + len, n)) {
            *at = p + len;
            PyObject *value = k == 0 ? Py_True : k == 1 ? Py_False : Py_None;
            return Py_NewRef(value);
        }
    }
    /* A hex string without spaces (an odd last digit is padded with 0). */
    if (b[p] == '<') {
        Py_ssize_t q = p + 1;
        while (q < n && hex_value(b[q]) >= 0)
            q++;
        if (q < n && b[q] == '>') {
            Py_ssize_t digits = q - p - 1;
            PyObject *out = PyBytes_FromStringAndSize(NULL, (digits + 1) / 2);
            if (out == NULL)
                return NULL;
            unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
            for (Py_ssize_t i = 0; i < digits; i += 2) {
                int hi = hex_value(b[p + 1 + i]);
                int lo = i + 1 < digits ? hex_value(b[p + 2 + i]) : 0;
                o[i / 2] = (unsigned char)(hi * 16 + lo);
            }
            *at = q + 1;
            return out;
        }
    }
    /* A literal string without escapes or parentheses. */
    if (b[p] == '(') {
        Py_ssize_t q = p + 1;
        while (q < n && b[q] != '(' && b[q] != ')' && b[q] != '\\')
            q++;
        if (q < n && b[q] == ')') {
            PyObject *out = PyBytes_FromStringAndSize((const char *)b + p + 1, q - p - 1);
            if (out != NULL)
                *at = q + 1;
            return out;
        }
    }
    return NO_MATCH;
}

/* The array whose "[" is at `start`, ended by the first "]" (_simple_array). */
static PyObject *
array(const Classes *c, const unsigned char *b, Py_ssize_t start, Py_ssize_t n,
      Py_ssize_t *after)
{
    const unsigned char *found = memchr(b + start, ']', (size_t)(n - start));
    if (found == NULL)
        return NO_MATCH;
    Py_ssize_t end = found - b;
    if (end - start > LAZY_ARRAY_BYTES) {
        Py_ssize_t i = start + 1;
        while (i < end && (classes[b[i]] & PLAIN))
            i++;
        if (i == end) {
            PyObject *raw = PyBytes_FromStringAndSize((const char *)b + start, end + 1 - start);
            if (raw == NULL)
                return NULL;
            PyObject *lazy = PyObject_CallOneArg(c->plain_array, raw);
            Py_DECREF(raw);
            if (lazy != NULL)
                *after = end + 1;
            return lazy;
        }
    }
    PyObject *items = PyList_New(0);
    if (items == NULL)
        return NULL;
    Py_ssize_t at = start + 1;
    /* Items are matched inside the array only: the regex ran with endpos just past "]". */
    const Py_ssize_t limit = end + 1;
    for (;;) {
        Py_ssize_t p = skip_ws(b, at, limit);
        PyObject *item = scalar(c, b, &p, limit);
        if (item == NULL) {
            Py_DECREF(items);
            return NULL;
        }
        if (item == NO_MATCH)
            break;
        int failed = PyList_Append(items, item);
        Py_DECREF(item);
        if (failed) {
            Py_DECREF(items);
            return NULL;
        }
        at = p;
    }
    if (skip_ws(b, at, end) != end) { /* a token the simple syntax does not know */
        Py_DECREF(items);
        return NO_MATCH;
    }
    *after = end + 1;
    return items;
}

/* The dictionary whose "<<" is at `pos`; on success `*after` is past its ">>". */
static PyObject *
dict_at(const Classes *c, const unsigned char *b, Py_ssize_t pos, Py_ssize_t n, int depth,
        Py_ssize_t *after)
{
    PyObject *entries = PyDict_New();
    if (entries == NULL)
        return NULL;
    Py_ssize_t at = pos + 2;
    for (;;) {
        /* An entry: whitespace, a key, whitespace, a value. */
        Py_ssize_t p = skip_ws(b, at, n);
        if (p >= n || b[p] != '/')
            break;
        Py_ssize_t key_end = name_end(b, p + 1, n);
        if (!ends(b, key_end, n))
            break;
        Py_ssize_t v = skip_ws(b, key_end, n);
        PyObject *value;
        if (v < n && b[v] == '[' ) {
            /* A scalar cannot start with "[", so the regex takes the array alternative. */
            value = array(c, b, v, n, &v);
        } else {
            Py_ssize_t q = v;
            value = scalar(c, b, &q, n);
            if (value == NO_MATCH && n - v >= 2 && b[v] == '<' && b[v + 1] == '<') {
                if (depth == SIMPLE_DEPTH - 1)
                    value = NO_MATCH; /* too deep: decline */
                else
                    value = dict_at(c, b, v, n, depth + 1, &q);
            }
            v = q;
        }
        if (value == NULL) {
            Py_DECREF(entries);
            return NULL;
        }
        if (value == NO_MATCH) {
            /* A key without a value the syntax covers (or an inner array or dictionary that
             * declined): decline, as Python does, whose ">>" test then meets the key. */
            Py_DECREF(entries);
            return NO_MATCH;
        }
        PyObject *key = make_name(c, b, p + 1, key_end);
        if (key == NULL || PyDict_SetItem(entries, key, value) < 0) {
            Py_XDECREF(key);
            Py_DECREF(value);
            Py_DECREF(entries);
            return NULL;
        }
        Py_DECREF(key);
        Py_DECREF(value);
        at = v;
    }
    Py_ssize_t close = skip_ws(b, at, n);
    if (n - close >= 2 && b[close] == '>' && b[close + 1] == '>') {
        *after = close + 2;
        return entries;
    }
    Py_DECREF(entries);
    return NO_MATCH;
}

static PyObject *
simple_dict(PyObject *module, PyObject *args)
{
    PyObject *buf;
    Py_ssize_t pos;
    Classes c;
    if (!PyArg_ParseTuple(args, "SnOOO:simple_dict", &buf, &pos, &c.name, &c.ref, &c.plain_array))
        return NULL;
    const Py_ssize_t n = PyBytes_GET_SIZE(buf);
    if (pos < 0 || pos > n - 2)
        Py_RETURN_NONE; /* no "<<" there: Python declines these too */
    Py_ssize_t after = 0;
    PyObject *entries =
        dict_at(&c, (const unsigned char *)PyBytes_AS_STRING(buf), pos, n, 0, &after);
    if (entries == NULL)
        return NULL;
    if (entries == NO_MATCH)
        Py_RETURN_NONE;
    PyObject *end = PyLong_FromSsize_t(after);
    if (end == NULL) {
        Py_DECREF(entries);
        return NULL;
    }
    PyObject *found = PyTuple_Pack(2, entries, end);
    Py_DECREF(entries);
    Py_DECREF(end);
    return found;
}

static PyMethodDef methods[] = {
    {"simple_dict", simple_dict, METH_VARARGS,
     "simple_dict(buf, pos, Name, Ref, PlainArray, /) -> (dict, end) | None\n\n"
     "The simple dictionary at buf[pos] and the offset after it, or None to decline:\n"
     "_pdfobj.simple_dict, in C, its values made of the classes given."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_simpledict", "The PDF parser's simple dictionaries, in C.", 0,
    methods,
};

PyMODINIT_FUNC
PyInit__simpledict(void)
{
    fill_classes();
    return PyModule_Create(&module);
}
