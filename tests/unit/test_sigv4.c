/* SPDX-License-Identifier: MIT */
/* test_sigv4.c -- AWS Signature Version 4 (core/sigv4.c) against the published AWS SigV4 test
 * suite (credentials AKIDEXAMPLE, 2015-08-30T12:36:00Z, us-east-1, service "service"): the
 * canonical requests, string-to-sign hashes and Authorization values of get-vanilla,
 * post-vanilla, get-vanilla-query-order-key-case, post-header-value-case,
 * get-header-value-trim, get-header-key-duplicate and get-unreserved, copied from the suite;
 * HMAC-SHA256 against RFC 4231 case 2; header order and case never change a signature; a
 * changed byte always does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/sha256.h"
#include "core/sigv4.h"

#define EMPTY_HASH "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SCOPE      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "

static const struct sigv4_scope suite = {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                                         "20150830T123600Z", "us-east-1", "service"};

struct vec {
    const char *name, *method, *path, *query;
    struct sigv4_header h[4];
    size_t n;
    const char *canonical; /* NULL: not published in this form */
    const char *authz;
};

#define H(n, v)                                                                                    \
    {                                                                                              \
        BSC_STR(n), BSC_STR(v)                                                                     \
    }
#define HOST H("Host", "example.amazonaws.com")
#define DATE H("X-Amz-Date", "20150830T123600Z")

static const struct vec vecs[] = {
    {"get-vanilla",
     "GET",
     "/",
     "",
     {HOST, DATE},
     2,
     "GET\n/"
     "\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" EMPTY_HASH,
     SCOPE "SignedHeaders=host;x-amz-date, "
           "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
    {"post-vanilla",
     "POST",
     "/",
     "",
     {HOST, DATE},
     2,
     NULL,
     SCOPE "SignedHeaders=host;x-amz-date, "
           "Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"},
    {"get-vanilla-query-order-key-case",
     "GET",
     "/",
     "Param2=value2&Param1=value1",
     {HOST, DATE},
     2,
     "GET\n/\nParam1=value1&Param2=value2\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z"
     "\n\nhost;x-amz-date\n" EMPTY_HASH,
     SCOPE "SignedHeaders=host;x-amz-date, "
           "Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
    {"post-header-value-case",
     "POST",
     "/",
     "",
     {HOST, H("My-Header1", "VALUE1"), DATE},
     3,
     NULL,
     SCOPE "SignedHeaders=host;my-header1;x-amz-date, "
           "Signature=cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d"},
    {"get-header-value-trim",
     "GET",
     "/",
     "",
     {HOST, H("My-Header1", " value1"), H("My-Header2", "\"a   b   c\""), DATE},
     4,
     NULL,
     SCOPE "SignedHeaders=host;my-header1;my-header2;x-amz-date, "
           "Signature=acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"},
    {"get-unreserved",
     "GET",
     "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
     "",
     {HOST, DATE},
     2,
     NULL,
     SCOPE "SignedHeaders=host;x-amz-date, "
           "Signature=07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"},
};

static struct sigv4_req req_of(const struct vec *v)
{
    struct sigv4_req r = {.method = bsc_str_cstr(v->method),
                          .path = bsc_str_cstr(v->path),
                          .query = bsc_str_cstr(v->query),
                          .headers = v->h,
                          .n_headers = v->n};

    memcpy(r.payload_hash, EMPTY_HASH, sizeof(r.payload_hash));
    return r;
}

static void check_authz(const struct sigv4_req *r, const char *want)
{
    struct bsc_buf out;

    bsc_buf_init(&out, 4096);
    assert_int_equal(sigv4_authorization(r, &suite, &out, NULL), BSC_OK);
    assert_string_equal(out.p, want);
    bsc_buf_cleanup(&out);
}

static void test_suite_vectors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
        struct sigv4_req r = req_of(&vecs[i]);

        if (vecs[i].canonical) {
            struct bsc_buf c;

            bsc_buf_init(&c, 4096);
            assert_int_equal(sigv4_canonical(&r, &c), BSC_OK);
            assert_string_equal(c.p, vecs[i].canonical);
            bsc_buf_cleanup(&c);
        }
        if (vecs[i].authz) {
            check_authz(&r, vecs[i].authz);
        }
    }
}

/* get-header-key-duplicate: My-Header1 three times (value2, value2, value1) joins in order. */
static void test_suite_duplicate_key(void **state)
{
    const struct sigv4_header h[] = {HOST, H("My-Header1", "value2"), H("My-Header1", "value2"),
                                     H("My-Header1", "value1"), DATE};
    struct sigv4_req r = {
        .method = BSC_STR("GET"), .path = BSC_STR("/"), .headers = h, .n_headers = 5};
    struct bsc_buf c;

    (void)state;
    memcpy(r.payload_hash, EMPTY_HASH, sizeof(r.payload_hash));
    bsc_buf_init(&c, 4096);
    assert_int_equal(sigv4_canonical(&r, &c), BSC_OK);
    assert_non_null(strstr(c.p, "\nmy-header1:value2,value2,value1\n"));
    bsc_buf_cleanup(&c);
    check_authz(&r,
                SCOPE "SignedHeaders=host;my-header1;x-amz-date, "
                      "Signature=c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea");
}

/* The string to sign's hash of get-vanilla's canonical request, as published. */
static void test_suite_canonical_hash(void **state)
{
    struct sigv4_req r = req_of(&vecs[0]);
    struct bsc_buf c;
    uint8_t d[BSC_SHA256_LEN];
    char hexd[BSC_SHA256_HEX_LEN + 1];

    (void)state;
    bsc_buf_init(&c, 4096);
    assert_int_equal(sigv4_canonical(&r, &c), BSC_OK);
    bsc_sha256(c.p, c.len, d);
    bsc_sha256_hex(d, hexd);
    assert_string_equal(hexd, "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
    bsc_buf_cleanup(&c);
}

/* RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?". */
static void test_hmac_rfc4231(void **state)
{
    uint8_t d[BSC_SHA256_LEN];
    char hexd[BSC_SHA256_HEX_LEN + 1];
    uint8_t longkey[131];

    (void)state;
    sigv4_hmac("Jefe", 4, "what do ya want for nothing?", 28, d);
    bsc_sha256_hex(d, hexd);
    assert_string_equal(hexd, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    /* case 6: a 131-byte key of 0xaa is hashed first */
    memset(longkey, 0xaa, sizeof(longkey));
    sigv4_hmac(longkey, sizeof(longkey), "Test Using Larger Than Block-Size Key - Hash Key First",
               54, d);
    bsc_sha256_hex(d, hexd);
    assert_string_equal(hexd, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

static void test_amz_date(void **state)
{
    char d[SIGV4_DATE_LEN];

    (void)state;
    sigv4_amz_date(1440938160, d); /* 2015-08-30T12:36:00Z */
    assert_string_equal(d, "20150830T123600Z");
}

/* Any order and case of the same headers signs the same; a changed value, path, query or
 * payload hash never does. Bedrock's path: a ':' sent as %3A is signed as %253A. */
static void test_order_and_tamper(void **state)
{
    const struct sigv4_header a[] = {H("Host", "h.example"), H("X-Amz-Date", "20240101T000000Z"),
                                     H("Content-Type", "application/json")};
    const struct sigv4_header b[] = {H("content-type", "application/json"),
                                     H("x-amz-date", "20240101T000000Z"), H("HOST", "h.example")};
    struct sigv4_req ra = {.method = BSC_STR("POST"),
                           .path = BSC_STR("/model/a.b-v1%3A0/converse"),
                           .headers = a,
                           .n_headers = 3};
    struct sigv4_req rb = ra;
    struct bsc_buf c;
    char sa[65], sb[65];
    struct bsc_buf out;

    (void)state;
    memcpy(ra.payload_hash, EMPTY_HASH, sizeof(ra.payload_hash));
    rb = ra;
    rb.headers = b;
    bsc_buf_init(&out, 4096);
    bsc_buf_init(&c, 4096);
    assert_int_equal(sigv4_canonical(&ra, &c), BSC_OK);
    assert_non_null(strstr(c.p, "\n/model/a.b-v1%253A0/converse\n"));
    assert_int_equal(sigv4_authorization(&ra, &suite, &out, sa), BSC_OK);
    assert_int_equal(sigv4_authorization(&rb, &suite, &out, sb), BSC_OK);
    assert_string_equal(sa, sb);
    rb.payload_hash[0] = 'f';
    assert_int_equal(sigv4_authorization(&rb, &suite, &out, sb), BSC_OK);
    assert_string_not_equal(sa, sb);
    rb = ra;
    rb.path = BSC_STR("/model/a.b-v1%3A0/converse-stream");
    assert_int_equal(sigv4_authorization(&rb, &suite, &out, sb), BSC_OK);
    assert_string_not_equal(sa, sb);
    bsc_buf_cleanup(&out);
    bsc_buf_cleanup(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_suite_vectors),
        cmocka_unit_test(test_suite_duplicate_key),
        cmocka_unit_test(test_suite_canonical_hash),
        cmocka_unit_test(test_hmac_rfc4231),
        cmocka_unit_test(test_amz_date),
        cmocka_unit_test(test_order_and_tamper),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
