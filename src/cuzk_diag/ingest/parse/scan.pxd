# The compiled build's view of scan.py: the loops over a line's bytes with C-typed locals and
# the chunk's buffers as typed memoryviews (a byte read is a C array read). The pure Python
# package ignores this file.
cimport cython
from libc.string cimport memchr, memcpy

@cython.locals(lines=Py_ssize_t, n=Py_ssize_t)
cpdef tuple line_breaks(bytes data)
@cython.locals(n=Py_ssize_t, base=cython.p_const_uchar, o=Py_ssize_t, p=Py_ssize_t,
               i=Py_ssize_t, q=Py_ssize_t, hit=cython.p_void)
cdef Py_ssize_t _line_fill(const unsigned char[::1] data, int[::1] offs, unsigned char[::1] out)

@cython.locals(width=Py_ssize_t, o=Py_ssize_t, i=Py_ssize_t, r=Py_ssize_t, a=Py_ssize_t,
               b=Py_ssize_t, nv=Py_ssize_t, bad=cython.uchar, j=Py_ssize_t, d=cython.uchar,
               v=cython.longlong, k=Py_ssize_t, e=Py_ssize_t, n=Py_ssize_t)
cpdef cpp_fill(const unsigned char[::1] data, const int[::1] offs, const long long[::1] rows,
               unsigned char[::1] shape, int[::1] shape_at, long long[:, ::1] vals,
               unsigned char[::1] odd)

@cython.locals(o=Py_ssize_t, i=Py_ssize_t, r=Py_ssize_t, a=Py_ssize_t, b=Py_ssize_t,
               j=Py_ssize_t, seen=cython.uchar, c=cython.uchar, c2=Py_ssize_t, c3=Py_ssize_t,
               c4=Py_ssize_t, off=cython.longlong, n_digits=Py_ssize_t, event=Py_ssize_t,
               w=Py_ssize_t, v0=Py_ssize_t, e=Py_ssize_t, k=Py_ssize_t,
               m=Py_ssize_t, neg=cython.uchar, v=cython.longlong, pre=Py_ssize_t,
               words=Py_ssize_t)
cpdef timeline_fill(const unsigned char[::1] data, const int[::1] offs,
                    const long long[::1] rows, const unsigned char[::1] events,
                    const long long[::1] event_at, long long[:, ::1] spans,
                    unsigned char[::1] shape, int[::1] shape_at, long long[:, ::1] vals,
                    unsigned char[:, ::1] good, long long[:, :, ::1] value_spans)

@cython.locals(nw=Py_ssize_t, i=Py_ssize_t, a=Py_ssize_t, n=Py_ssize_t, c=cython.uchar,
               k=Py_ssize_t, s=Py_ssize_t, m=Py_ssize_t, j=Py_ssize_t)
cpdef prefix_loop(const unsigned char[::1] data, const int[::1] offs,
                  const unsigned char[::1] words, const long long[::1] word_at,
                  unsigned char[::1] codes)

@cython.locals(k=Py_ssize_t)
cdef inline bint _at(const unsigned char[::1] data, Py_ssize_t j, bytes word)

@cython.locals(o=Py_ssize_t, i=Py_ssize_t, j=Py_ssize_t, k=Py_ssize_t)
cpdef _copy(const unsigned char[::1] data, const long long[:] starts,
            const long long[:] ends, unsigned char[::1] out, int[::1] at)

@cython.locals(o=Py_ssize_t, p=Py_ssize_t, q=Py_ssize_t, i=Py_ssize_t, r=Py_ssize_t,
               a=Py_ssize_t, b=Py_ssize_t, j=Py_ssize_t, k=Py_ssize_t, e=Py_ssize_t,
               n=Py_ssize_t)
cpdef tracing_shape_fill(const unsigned char[::1] data, const int[::1] offs,
                         const long long[::1] rows, unsigned char[::1] shape, int[::1] shape_at,
                         int[::1] spaces, int[::1] space_at)

@cython.locals(i=Py_ssize_t, r=Py_ssize_t, a=Py_ssize_t, b=Py_ssize_t, w0=Py_ssize_t,
               j=Py_ssize_t, f=Py_ssize_t, s=Py_ssize_t, e=Py_ssize_t, k=Py_ssize_t,
               n=Py_ssize_t, cls=cython.uchar, neg=bint, v=cython.longlong, c=cython.uchar)
cpdef cut_fill(const unsigned char[::1] data, const int[::1] offs, const long long[::1] rows,
               const int[::1] spaces, const int[::1] space_at, const long long[::1] at,
               Py_ssize_t words, const long long[:, ::1] cuts, long long[:, :, ::1] spans,
               unsigned char[::1] fit, const unsigned char[::1] classes, long long[:, ::1] vals)

@cython.locals(base=cython.p_const_uchar, hit=cython.p_void)
cdef inline Py_ssize_t _next(const unsigned char[::1] data, Py_ssize_t j, Py_ssize_t b,
                             unsigned char c)

@cython.locals(j=Py_ssize_t, seen=cython.uchar)
cdef inline bint _ascii(const unsigned char[::1] data, Py_ssize_t s, Py_ssize_t e)

@cython.locals(j=Py_ssize_t, c=cython.uchar)
cdef inline bint _plain(const unsigned char[::1] data, Py_ssize_t s, Py_ssize_t e)

cdef inline bint _some(const unsigned char[::1] data, Py_ssize_t s, Py_ssize_t e)

@cython.locals(j=Py_ssize_t)
cdef inline bint _not_text(const unsigned char[::1] data, Py_ssize_t s, Py_ssize_t e)

@cython.locals(nw=Py_ssize_t, i=Py_ssize_t, r=Py_ssize_t, a=Py_ssize_t, b=Py_ssize_t,
               level=int, found=cython.uchar, e=Py_ssize_t, k=Py_ssize_t, s=Py_ssize_t,
               st=Py_ssize_t, w=Py_ssize_t, wa=Py_ssize_t, n=Py_ssize_t, j=Py_ssize_t)
cpdef tracing_fill(const unsigned char[::1] data, const int[::1] offs, const long long[::1] rows,
                   Py_ssize_t shortest, const long long[::1] shift,
                   const unsigned char[::1] words, const long long[::1] word_at,
                   const long long[::1] tails, unsigned char[::1] heads,
                   unsigned char[::1] relevant, bint search=*)

@cython.locals(k=Py_ssize_t, c=cython.uchar, j=Py_ssize_t)
cdef inline int _level(const unsigned char[::1] data, Py_ssize_t a, Py_ssize_t b)

@cython.locals(k=Py_ssize_t)
cdef inline bint _digits(const unsigned char[::1] data, Py_ssize_t j, Py_ssize_t b,
                         Py_ssize_t n)

@cython.locals(o=Py_ssize_t, i=Py_ssize_t, p=Py_ssize_t, kind=cython.uchar, j=Py_ssize_t,
               v=cython.longlong, u=cython.ulonglong, t=cython.ulonglong, nd=Py_ssize_t,
               k=Py_ssize_t, c=Py_ssize_t)
cpdef join_fill(const long long[::1] const_at,
                const unsigned char[::1] kinds, const long long[::1] col_of,
                const long long[:, ::1] ints, const unsigned char[::1] text_data,
                const long long[:, ::1] text_at, const unsigned char[::1] pairs,
                unsigned char[::1] out, int[::1] out_at)

@cython.locals(j=Py_ssize_t, c=cython.uchar, seen=cython.uchar)
cpdef bint json_escaped(const unsigned char[::1] data)

# Whether the module runs compiled (as ``COMPILED``, which the tests may change): a C flag.
cdef bint _LOOPS_COMPILED

@cython.locals(o=Py_ssize_t, missing=Py_ssize_t, r=Py_ssize_t, g=Py_ssize_t, k=Py_ssize_t,
               i=Py_ssize_t, j=Py_ssize_t, s=Py_ssize_t, e=Py_ssize_t, ok=bint)
cpdef Py_ssize_t gather_fill(const long long[::1] order, const long long[::1] which,
                             const long long[::1] first, const long long[::1] step,
                             const unsigned char[::1] nulls, const long long[::1] bits_off,
                             const long long[:, ::1] addresses, list held,
                             unsigned char[::1] out, int[::1] out_at,
                             unsigned char[::1] valid) except -1
