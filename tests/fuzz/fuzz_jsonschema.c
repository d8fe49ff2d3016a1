/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/contract/jsonschema.c src/contract/jsonschema_compile.c */
/* fuzz-sources: src/contract/jsonschema_format.c src/contract/jsonschema_parse.c */
/* fuzz-sources: src/contract/jsonschema_regex.c src/contract/jsonschema_value.c */
/* fuzz_jsonschema.c -- libFuzzer target for the structured-output validator. The input is a
 * schema document, a NUL byte, then an instance document (no NUL: the document is validated
 * against itself). Beyond "no crash, no leak, no UB, no hang" it checks, aborting when one
 * breaks:
 *   - js_compile() returns a schema exactly when it succeeds, and a message when it fails;
 *   - js_validate_text() and js_validate() on the same parsed instance agree on the verdict and
 *     on every error field; a second run gives the same answer (no hidden state);
 *   - a failure always has a keyword, a message and a pointer that is "" or starts with '/';
 *     a success leaves all three empty;
 *   - the instance bytes compiled as a pattern either compile (then a search over the schema
 *     bytes answers 1, 0 or "budget spent") or fail with a reason;
 *   - the same bytes mapped onto a small alphabet where ECMA-262 and POSIX ERE agree (literals,
 *     '.', classes, * + ?, |, groups, ^ $) give the same yes/no as glibc's regexec() on short
 *     printable subjects: an independent oracle for the automaton.
 * Built and run by scripts/fuzz (tests/fuzz/jsonschema.dict, seeds in corpus/jsonschema/). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <regex.h>

#include <json-c/json.h>

#include "core/compat.h"
#include "contract/internal.h"
#include "contract/jsonschema.h"

static void die(const char *what)
{
    fprintf(stderr, "fuzz_jsonschema: invariant broken: %s\n", what);
    abort();
}

static void check_error(bool ok, const struct js_error *e)
{
    if (ok) {
        if (e->pointer[0] || e->keyword[0] || e->message[0])
            die("a success left error fields set");
        return;
    }
    if (!e->keyword[0] || !e->message[0])
        die("a failure without keyword or message");
    if (e->pointer[0] && e->pointer[0] != '/')
        die("a pointer that does not start with '/'");
    if (strnlen(e->pointer, sizeof(e->pointer)) == sizeof(e->pointer) ||
        strnlen(e->keyword, sizeof(e->keyword)) == sizeof(e->keyword) ||
        strnlen(e->message, sizeof(e->message)) == sizeof(e->message))
        die("an unterminated error field");
}

static bool same_error(const struct js_error *a, const struct js_error *b)
{
    return strcmp(a->pointer, b->pointer) == 0 && strcmp(a->keyword, b->keyword) == 0 &&
           strcmp(a->message, b->message) == 0;
}

static void validate(const struct js_schema *s, struct bsc_str inst)
{
    struct js_error e1, e2, e3;
    struct json_object *tree;
    char why[128];
    bool ok1, ok2, ok3;

    ok1 = js_validate_text(s, inst, &e1);
    check_error(ok1, &e1);
    ok2 = js_validate_text(s, inst, &e2);
    if (ok1 != ok2 || !same_error(&e1, &e2))
        die("two runs of js_validate_text() disagree");
    if (js__parse(inst, JS_MAX_INSTANCE_DEPTH, &tree, why, sizeof(why)) != BSC_OK) {
        if (ok1 || strcmp(e1.keyword, "json") != 0)
            die("unparsable text not reported as \"json\"");
        return;
    }
    ok3 = js_validate(s, tree, &e3);
    check_error(ok3, &e3);
    if (ok1 != ok3 || !same_error(&e1, &e3))
        die("js_validate() and js_validate_text() disagree");
    json_object_put(tree);
}

static void compile_and_validate(struct bsc_str schema_text, struct bsc_str inst)
{
    struct json_object *doc;
    struct js_schema *s = NULL;
    char why[128], err[300];
    enum bsc_err rc;

    if (js__parse(schema_text, JS_MAX_INSTANCE_DEPTH, &doc, why, sizeof(why)) != BSC_OK)
        return;
    rc = js_compile(doc, &s, err, sizeof(err));
    /* The compiled schema must not depend on the document staying alive. */
    json_object_put(doc);
    if (rc == BSC_OK) {
        if (!s || err[0])
            die("js_compile() succeeded without a schema or with a message");
        validate(s, inst);
        js_free(s);
        return;
    }
    if (s || err[0] != '#')
        die("js_compile() failed with a schema or without a \"#...\" message");
}

static void pattern(struct bsc_str src, struct bsc_str subject)
{
    struct js_regex *re = NULL;
    uint64_t budget = 200000;
    char why[160] = "";
    enum bsc_err rc;
    int r;

    rc = js_regex_compile(src.p, src.len, 0, &re, why, sizeof(why));
    if (rc) {
        if (re || !why[0])
            die("pattern refused with an automaton or without a reason");
        return;
    }
    r = js_regex_search(re, subject.p, subject.len, &budget);
    if (r != 0 && r != 1 && r != -BSC_ELIMIT)
        die("search answered outside {1, 0, -BSC_ELIMIT}");
    if ((r == -BSC_ELIMIT) != (budget == 0))
        die("budget exhaustion misreported");
    js_regex_free(re);
}

/* True when '^' or '$' is used as an anchor other than at the very start or end: glibc matches
 * /(^.)+b/ in "xx..b", where ECMA-262 (and node) do not. Brackets are skipped ("[]" and "[^]"
 * were excluded before, so the first ']' closes). */
static bool inner_anchor(const char *pat, size_t n)
{
    bool in = false;

    for (size_t i = 0; i < n; i++) {
        if (!in && pat[i] == '[') {
            in = true;
            if (i + 1 < n && pat[i + 1] == '^')
                i++;
        } else if (in && pat[i] == ']') {
            in = false;
        } else if (!in && ((pat[i] == '^' && i > 0) || (pat[i] == '$' && i + 1 < n))) {
            return true;
        }
    }
    return false;
}

/* Builds a pattern and a subject over alphabets where both dialects mean the same, skipping the
 * few spellings they read differently ("[]" is an empty class in ECMA-262, an open bracket in
 * POSIX; a quantifier followed by '?'; anchors inside). Patterns either side refuses are not
 * compared. */
static void oracle(struct bsc_str src, struct bsc_str subj_src)
{
    static const char pat_abc[] = "ab.*+?|()[]^$-c";
    static const char subj_abc[] = "abc-.x[]";
    char pat[25], subj[65];
    size_t np = src.len < 24 ? src.len : 24, ns = subj_src.len < 64 ? subj_src.len : 64;
    struct js_regex *re;
    regex_t posix;
    regmatch_t m[1];
    uint64_t budget = 1000000;
    char why[160];
    int ours, theirs;

    for (size_t i = 0; i < np; i++)
        pat[i] = pat_abc[(unsigned char)src.p[i] % (sizeof(pat_abc) - 1)];
    pat[np] = '\0';
    for (size_t i = 0; i < ns; i++)
        subj[i] = subj_abc[(unsigned char)subj_src.p[i] % (sizeof(subj_abc) - 1)];
    subj[ns] = '\0';
    /* POSIX reads "x+?" as "(x+)?", ECMA-262 as a lazy "x+". */
    if (strstr(pat, "[]") || strstr(pat, "[^]") || strstr(pat, "*?") || strstr(pat, "+?") ||
        strstr(pat, "??") || inner_anchor(pat, np))
        return;
    if (js_regex_compile(pat, np, 0, &re, why, sizeof(why)) != BSC_OK)
        return;
    if (regcomp(&posix, pat, REG_EXTENDED | REG_NOSUB) != 0) {
        js_regex_free(re);
        return;
    }
    ours = js_regex_search(re, subj, ns, &budget);
    m[0].rm_so = 0;
    m[0].rm_eo = (regoff_t)ns;
    theirs = regexec(&posix, subj, 1, m, REG_STARTEND) == 0;
    regfree(&posix);
    js_regex_free(re);
    if (ours != theirs) {
        fprintf(stderr, "pattern /%s/ subject \"%s\": ours %d, glibc %d\n", pat, subj, ours,
                theirs);
        die("the automaton disagrees with POSIX regexec() on the common subset");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    const char *nul = memchr(p, '\0', size);
    struct bsc_str schema = bsc_str_make(p, size), inst = schema;

    if (size > 1 << 16)
        return 0;
    if (nul) {
        schema = bsc_str_make(p, (size_t)(nul - p));
        inst = bsc_str_make(nul + 1, size - schema.len - 1);
    }
    compile_and_validate(schema, inst);
    pattern(bsc_str_make(inst.p, inst.len < 512 ? inst.len : 512), schema);
    oracle(inst, schema);
    return 0;
}
