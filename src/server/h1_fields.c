/* SPDX-License-Identifier: MIT */
/* h1_fields.c -- the request fields that frame a message or the connection, as the request
 * reader (h1_parse.c) recognises them: Content-Length, Transfer-Encoding, Connection (and
 * Proxy-Connection), Upgrade. A name is classified at its colon; a value is matched a byte
 * at a time (these values are short), with the rules of http-parser 2.9, whose decisions the
 * reader keeps: names matched case-insensitively with any trailing spaces, Connection and
 * Transfer-Encoding read as comma-separated token lists, Content-Length digits with only
 * spaces after them. Pure. See docs/internals/server.md. */
#include <string.h>

#include "core/tchar16.h"
#include "server/internal.h"

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* tchar (RFC 9110), lowercased; 0 for anything else. */
const char srv__h1_tokens[256] = {
    ['!'] = '!', ['#'] = '#', ['$'] = '$', ['%'] = '%', ['&'] = '&', ['\''] = '\'', ['*'] = '*',
    ['+'] = '+', ['-'] = '-', ['.'] = '.', ['^'] = '^', ['_'] = '_', ['`'] = '`',   ['|'] = '|',
    ['~'] = '~', ['0'] = '0', ['1'] = '1', ['2'] = '2', ['3'] = '3', ['4'] = '4',   ['5'] = '5',
    ['6'] = '6', ['7'] = '7', ['8'] = '8', ['9'] = '9', ['A'] = 'a', ['B'] = 'b',   ['C'] = 'c',
    ['D'] = 'd', ['E'] = 'e', ['F'] = 'f', ['G'] = 'g', ['H'] = 'h', ['I'] = 'i',   ['J'] = 'j',
    ['K'] = 'k', ['L'] = 'l', ['M'] = 'm', ['N'] = 'n', ['O'] = 'o', ['P'] = 'p',   ['Q'] = 'q',
    ['R'] = 'r', ['S'] = 's', ['T'] = 't', ['U'] = 'u', ['V'] = 'v', ['W'] = 'w',   ['X'] = 'x',
    ['Y'] = 'y', ['Z'] = 'z', ['a'] = 'a', ['b'] = 'b', ['c'] = 'c', ['d'] = 'd',   ['e'] = 'e',
    ['f'] = 'f', ['g'] = 'g', ['h'] = 'h', ['i'] = 'i', ['j'] = 'j', ['k'] = 'k',   ['l'] = 'l',
    ['m'] = 'm', ['n'] = 'n', ['o'] = 'o', ['p'] = 'p', ['q'] = 'q', ['r'] = 'r',   ['s'] = 's',
    ['t'] = 't', ['u'] = 'u', ['v'] = 'v', ['w'] = 'w', ['x'] = 'x', ['y'] = 'y',   ['z'] = 'z',
};

static bool is_token(unsigned char c)
{
    return srv__h1_tokens[c] != 0;
}

/* What a field is for the framing, from its name [<n>, <n> + <stored>) of <len> bytes
 * whose last non-space byte ends at <end>: http-parser matched the five names below
 * case-insensitively, with any trailing spaces, and noted a Transfer-Encoding field by its
 * first 17 bytes alone -- which also undid a "chunked" seen before: that is not the last
 * coding any more. */
void srv__h1_classify_name(struct srv__h1 *h, const char *n, size_t len, size_t end)
{
    if (len >= 17 && bsc_tchar_ieq(n, "transfer-encoding", 17)) {
        h->flags |= SRV__H1_F_TE;
        h->flags &= (uint16_t)~SRV__H1_F_CHUNKED;
    }
    h->field = SRV__FM_GENERAL;
    if (end == 14 && bsc_tchar_ieq(n, "content-length", 14))
        h->field = SRV__FM_CL;
    else if (end == 10 && bsc_tchar_ieq(n, "connection", 10))
        h->field = SRV__FM_CONNECTION;
    else if (end == 16 && bsc_tchar_ieq(n, "proxy-connection", 16))
        h->field = SRV__FM_CONNECTION;
    else if (end == 17 && bsc_tchar_ieq(n, "transfer-encoding", 17))
        h->field = SRV__FM_TE;
    else if (end == 7 && bsc_tchar_ieq(n, "upgrade", 7))
        h->field = SRV__FM_UPGRADE;
}

/* The first byte of a value (or of a folded trailer line): http-parser looked at it for the
 * framing fields without checking it as a value byte. NULL, or why it is refused. */
const char *srv__h1_value_first(struct srv__h1 *h, unsigned char ch)
{
    unsigned char c = ch | 0x20;

    h->index = 0;
    switch (h->field) {
    case SRV__FM_UPGRADE:
        h->flags |= SRV__H1_F_UPGRADE;
        h->field = SRV__FM_GENERAL;
        break;
    case SRV__FM_TE:
        h->field = c == 'c' ? SRV__FM_TE_M_CHUNKED : SRV__FM_TE_TOKEN;
        break;
    case SRV__FM_CL:
        if (!is_digit(ch))
            return "invalid character in content-length header";
        if (h->flags & SRV__H1_F_CONTENT_LENGTH)
            return "unexpected content-length header";
        h->flags |= SRV__H1_F_CONTENT_LENGTH;
        h->content_length = ch - '0';
        h->field = SRV__FM_CL_NUM;
        break;
    case SRV__FM_CONNECTION:
        h->field = c == 'k'   ? SRV__FM_M_KEEP
                   : c == 'c' ? SRV__FM_M_CLOSE
                   : c == 'u' ? SRV__FM_M_UPG
                              : SRV__FM_CONN_TOKEN;
        break;
    case SRV__FM_CL_WS:
    case SRV__FM_TE_TOKEN_START:
    case SRV__FM_CONN_TOKEN_START:
        break;
    default:
        h->field = SRV__FM_GENERAL;
        break;
    }
    return NULL;
}

/* Matches <c> (lowercased) as byte <index> + 1 of <word>: the next field state. */
static uint8_t match_word(struct srv__h1 *h, unsigned char c, const char *word, uint8_t on,
                          uint8_t done, uint8_t miss)
{
    size_t n = strlen(word);

    h->index++;
    if (h->index > n || c != (unsigned char)word[h->index])
        return miss;
    return h->index == n - 1 ? done : on;
}

static const char *conn_token_start(struct srv__h1 *h, unsigned char c)
{
    if (c == 'k')
        h->field = SRV__FM_M_KEEP;
    else if (c == 'c')
        h->field = SRV__FM_M_CLOSE;
    else if (c == 'u')
        h->field = SRV__FM_M_UPG;
    else if (is_token(c))
        h->field = SRV__FM_CONN_TOKEN;
    else if (c != ' ' && c != '\t')
        h->field = SRV__FM_GENERAL;
    return NULL;
}

/* A later byte of a framing field's value. NULL, or why it is refused. */
const char *srv__h1_value_step(struct srv__h1 *h, unsigned char ch)
{
    unsigned char c = ch | 0x20;

    switch (h->field) {
    case SRV__FM_CL_NUM:
        if (ch == ' ') {
            h->field = SRV__FM_CL_WS;
            break;
        }
        if (!is_digit(ch) || (UINT64_MAX - 10) / 10 < h->content_length)
            return "invalid character in content-length header";
        h->content_length = h->content_length * 10 + (ch - '0');
        break;
    case SRV__FM_CL_WS:
        if (ch != ' ')
            return "invalid character in content-length header";
        break;
    case SRV__FM_TE_TOKEN_START:
        if (c == 'c')
            h->field = SRV__FM_TE_M_CHUNKED;
        else if (is_token(c))
            h->field = SRV__FM_TE_TOKEN;
        else if (c != ' ' && c != '\t')
            h->field = SRV__FM_GENERAL;
        break;
    case SRV__FM_TE_M_CHUNKED:
        h->field = match_word(h, c, "chunked", SRV__FM_TE_M_CHUNKED, SRV__FM_TE_CHUNKED,
                              SRV__FM_TE_TOKEN);
        break;
    case SRV__FM_TE_TOKEN:
        if (ch == ',') {
            h->field = SRV__FM_TE_TOKEN_START;
            h->index = 0;
        }
        break;
    case SRV__FM_TE_CHUNKED:
        if (ch != ' ')
            h->field = SRV__FM_TE_TOKEN;
        break;
    case SRV__FM_CONN_TOKEN_START:
        return conn_token_start(h, c);
    case SRV__FM_M_KEEP:
        h->field = match_word(h, c, "keep-alive", SRV__FM_M_KEEP, SRV__FM_IS_KEEP,
                              SRV__FM_CONN_TOKEN);
        break;
    case SRV__FM_M_CLOSE:
        h->field = match_word(h, c, "close", SRV__FM_M_CLOSE, SRV__FM_IS_CLOSE, SRV__FM_CONN_TOKEN);
        break;
    case SRV__FM_M_UPG:
        h->field = match_word(h, c, "upgrade", SRV__FM_M_UPG, SRV__FM_IS_UPG, SRV__FM_CONN_TOKEN);
        break;
    case SRV__FM_CONN_TOKEN:
        if (ch == ',') {
            h->field = SRV__FM_CONN_TOKEN_START;
            h->index = 0;
        }
        break;
    case SRV__FM_IS_KEEP:
    case SRV__FM_IS_CLOSE:
    case SRV__FM_IS_UPG:
        if (ch == ',') {
            h->flags |= h->field == SRV__FM_IS_KEEP    ? SRV__H1_F_KEEP_ALIVE
                        : h->field == SRV__FM_IS_CLOSE ? SRV__H1_F_CLOSE
                                                       : SRV__H1_F_CONN_UPGRADE;
            h->field = SRV__FM_CONN_TOKEN_START;
            h->index = 0;
        } else if (ch != ' ') {
            h->field = SRV__FM_CONN_TOKEN;
        }
        break;
    default:
        h->field = SRV__FM_GENERAL;
        break;
    }
    return NULL;
}

/* A field line ended (not folded): what the value said about the connection and framing. */
void srv__h1_finish_field(struct srv__h1 *h)
{
    if (h->field == SRV__FM_IS_KEEP)
        h->flags |= SRV__H1_F_KEEP_ALIVE;
    else if (h->field == SRV__FM_IS_CLOSE)
        h->flags |= SRV__H1_F_CLOSE;
    else if (h->field == SRV__FM_IS_UPG)
        h->flags |= SRV__H1_F_CONN_UPGRADE;
    else if (h->field == SRV__FM_TE_CHUNKED)
        h->flags |= SRV__H1_F_CHUNKED;
    h->field = SRV__FM_GENERAL;
}
