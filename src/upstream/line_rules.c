/* SPDX-License-Identifier: MIT */
/* line_rules.c -- the response head's wire rules, one line at a time, as libcurl hands the
 * lines to its header callback. libcurl 7.88 accepts a line ended by a bare LF, passes a
 * folded line through as a line of its own, reads "gzip, chunked" as chunked, and after a
 * 101 it did not ask for reads the rest as a body up to the close. Each is a way for two
 * readers of the same bytes to disagree on where an answer ends. */
#include <string.h>

#include "core/str.h"
#include "upstream/h1_wire.h"
#include "upstream/line_rules.h"

/* The status code of a status line "HTTP/x.y NNN ...", or 0 when it has none. */
static int status_of(const char *p, size_t len)
{
    const char *sp = memchr(p, ' ', len);
    int code = 0;

    if (!sp || (size_t)(p + len - sp) < 4)
        return 0;
    for (int i = 1; i <= 3; i++) {
        if (sp[i] < '0' || sp[i] > '9')
            return 0;
        code = code * 10 + (sp[i] - '0');
    }
    return code;
}

static const char *status_line(struct up_line_rules *st, const char *p, size_t len)
{
    int code = status_of(p, len);

    st->te_lines = 0;
    if (code == 101)
        return "101 Switching Protocols to a request that asked for no upgrade";
    if (code >= 100 && code < 200 && ++st->interim > H1_INTERIM_MAX)
        return "too many interim (1xx) responses";
    return NULL;
}

/* <line> is a header line without its CRLF. */
static const char *header_line(struct up_line_rules *st, struct bsc_str line)
{
    const char *colon = memchr(line.p, ':', line.len);
    struct bsc_str name = bsc_str_make(line.p, colon ? (size_t)(colon - line.p) : 0);
    struct bsc_str value;

    if (!colon || !bsc_str_ieq(name, BSC_STR("transfer-encoding")))
        return NULL;
    value = bsc_str_trim(bsc_str_make(colon + 1, line.len - (size_t)(colon + 1 - line.p)));
    if (++st->te_lines > 1 || !bsc_str_ieq(value, BSC_STR("chunked")))
        return "Transfer-Encoding other than chunked";
    return NULL;
}

const char *up__line_check(struct up_line_rules *st, const char *p, size_t len)
{
    if (len == 0)
        return NULL;
    if (len < 2 || p[len - 1] != '\n' || p[len - 2] != '\r')
        return "line ends in a bare LF (CRLF required)";
    if (memchr(p, '\r', len - 2))
        return "CR not followed by LF";
    if (len == 2)
        return NULL; /* the end of a head */
    if (p[0] == ' ' || p[0] == '\t')
        return "obsolete line folding in the head";
    if (len >= 5 && memcmp(p, "HTTP/", 5) == 0)
        return status_line(st, p, len - 2);
    return header_line(st, bsc_str_make(p, len - 2));
}
