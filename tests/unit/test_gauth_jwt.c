/* SPDX-License-Identifier: MIT */
/* test_gauth_jwt.c -- the service account's JWT bearer assertion (gauth/jwt.c): base64url
 * against RFC 4648's vectors; the key file read (and refused without a key or an email); the
 * assertion at a fixed time equals the one `openssl dgst -sha256 -sign` produces over the
 * same header and claims with the same key (RS256 over PKCS#1 v1.5 is deterministic), the
 * vector below; a key that is not RSA PEM is refused. The key is bascule-sim's test service
 * account (tests/lib/vertex_sa.mjs), never a real one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gauth/gauth.h"

static const char pem[] = "-----BEGIN PRIVATE KEY-----\n"
                          "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCVqy2iWtdfcuxY\n"
                          "FoPSlB9CUaG9e7eRNnJ8cU9w/plS48otk2OtRwSW65lZ904Zqrjzk5wsY4It1CBj\n"
                          "DEPgbt4sQehF5k2fY0285l20odJ2hgRJdBn9Z/KHg70edITs+aKfsJsLwIvuWswQ\n"
                          "css+fs/vQX8uObHmKLe5Kz3SBwuMKKOERzI/MW2mywIye7TeAoEZ0PmT1xy5Kq9/\n"
                          "vaCrRjRdqoqYkEWbO+v1//uItJSAdeOkFy3xCVXpN5o4wA9MzL7fWthX4lpA5/1c\n"
                          "D4062bbEU3zH8o8yyD/iUvR5vqoGh7r04z9/sCBUy+x65pqFzK2DCvy4xKEO8NMO\n"
                          "iWU87oZFAgMBAAECggEAA1vmTXSqImoYXs5mjU/Qtx17j/PvsJJ0avw6CF2rwD38\n"
                          "2B1XiS3aWa7A8CbKOcOTR2LX3ZvVce+G/eIVFeY3Fe7cESbe4BsLmsKKy4Eu5tpm\n"
                          "zI/j/hlv9Sr3kBrqWXfYIVWxLR2C+8mi4c2fEnB90dn6Sjsg6yWdIJ/qpm+NCqCy\n"
                          "vE9al7nGZh/otaOrU7kZEZ2+3up3Qn/3MKKHhMbjb0cIn1yA6yrLgUqZoDjC/2mY\n"
                          "32bXRnQ27YdkR+Z2JB84MMM/zO7HPYQb2xgbQwBIgOJubcPSNfkqJEx7oyKcuSRc\n"
                          "SoyESkCN/8odaC2ZiWOk0WvWmtH6nR2vnwW/oOk6gwKBgQDKRg+FzBD2ZYj053CK\n"
                          "MS3oqUyNBM20XqWXXStUwTV6jn97o/Av1dwDTqFCs/s2EsFnUmdoBF2kMCbtCGsI\n"
                          "v3wJVB/lz+eiHUSXbmEgBNtAxMQB8l2+hi5yE076tCcyeffaHmxl9HK1vxF4RUFX\n"
                          "CYT64DnEzMX/FUceinXWUicKswKBgQC9bCa/5ouwRio08HifIkyGGQ9ZGE3slI5B\n"
                          "xhVNG756mZDlSeNsTXlvcPX1K66gZH4pPStgZsTsVfIMMuaVQmGuybmd0t2X+b9M\n"
                          "MQuvXE5vwuLTIYpCoFoUzH/EHVP1uIY65VmbtYDYq5S1bXxabuAwO0I7JKmmORTS\n"
                          "PgsmBgsHJwKBgQCy3ctiNHcXe+flMTfaa+y93d/cn8/LXRqvQ+tKUmQZESN4URrX\n"
                          "IhUhM4n0czWEtoch98OLPrkTtKTnXFdR8AoeMa7XSMb7G0iJZEksyD6eAqGVWx48\n"
                          "mWk+5QYlOeOjhil/TwHqEoTRZLltEkjaT4exVVCgT7gSfl1ai3PyZskxcwKBgBBH\n"
                          "+HisFzuafEw6kxOSfiNUihYtWZ1JE4UhwnjzNocRJfwfQrXvXs2uVuWw0HymxpVC\n"
                          "1bSegLSTmo9j3J/dqcm9OwAOvM8wPzoMSSXUeEVw6dAd5OVfJP7+qMixgKLxLlBn\n"
                          "oDEbA60b6ldBxtt7Bjf/D+1HdHF+HIUJoimtgUsnAoGAM70bCDUbwBdY1VXEXsR1\n"
                          "Cixgfwaf22GfKx4wtTJtKOZxfx/sO1Y+KjgB+BbRDzczJ6vM1HwGsAE5cBw2VMeR\n"
                          "tPnIaDZuoAjboBbLeWT6Y4ItTC05cwK8bpvkxdJ1pNHz5osyjVqWe3PqrxXtGsSz\n"
                          "SLiqFICbBM9XgKrQcGxWoec=\n"
                          "-----END PRIVATE KEY-----\n";

/* openssl dgst -sha256 -sign <the key above> over the first two parts, base64url. */
static const char want[] =
    "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJnYXRld2F5QHNpbS1wcm9qZWN0LmlhbS5nc2Vydml"
    "jZWFjY291bnQuY29tIiwic2NvcGUiOiJodHRwczovL3d3dy5nb29nbGVhcGlzLmNvbS9hdXRoL2Nsb3VkLXBsYXR"
    "mb3JtIiwiYXVkIjoiaHR0cHM6Ly9vYXV0aDIuZ29vZ2xlYXBpcy5jb20vdG9rZW4iLCJpYXQiOjE3MDAwMDAwMDA"
    "sImV4cCI6MTcwMDAwMzYwMH0.ec0ccIcUIf2AdSfGDYa9SzShxIEXGdEukIfEUGJ8bT-yUmdbznUhkrEDSvyonlu"
    "xQ0goFSD8fSbx3OOaB93CLH2dEOts4PDVEFSk5z5mEQCMkNdMJOuFXyIk3yoZULatbq_8ASzLTnlUH39zSE9Cx1n"
    "7_3s_FfbY_GbPl3dBwVuEA89a0Fb9AUuHSAnJpjNWi8K_g_XmjZivj-Z3ToWH2pCvPU4F-KZvjsD6RNlx-56rKWF"
    "Ze4aliKOMUsyUGplXNeJPsTpU5V847ZVKhUW6Akhp-FSoXp7crZk9oEwMHVfieKzxEyf3K9XhL3eUjXtU7yOvFs-"
    "rieQNN7Oa_sUoeQ";

static void test_b64url(void **state)
{
    static const char *const in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const out[] = {"", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE", "Zm9vYmFy"};
    struct bsc_buf b;

    (void)state;
    for (size_t i = 0; i < 7; i++) {
        bsc_buf_init(&b, 64);
        assert_int_equal(gauth_b64url(&b, in[i], strlen(in[i])), BSC_OK);
        assert_string_equal(b.p ? b.p : "", out[i]);
        bsc_buf_cleanup(&b);
    }
    bsc_buf_init(&b, 64);
    assert_int_equal(gauth_b64url(&b, "\xfb\xff", 2), BSC_OK);
    assert_string_equal(b.p, "-_8"); /* the URL-safe alphabet */
    bsc_buf_cleanup(&b);
}

static char *sa_json(const char *key, const char *email)
{
    static char buf[8192];
    size_t o = 0;

    o += (size_t)snprintf(buf + o, sizeof(buf) - o, "{\"type\":\"service_account\",");
    if (email)
        o += (size_t)snprintf(buf + o, sizeof(buf) - o, "\"client_email\":\"%s\",", email);
    o += (size_t)snprintf(buf + o, sizeof(buf) - o, "\"private_key\":\"");
    for (const char *p = key; *p && o < sizeof(buf) - 4; p++) {
        if (*p == '\n') {
            buf[o++] = '\\';
            buf[o++] = 'n';
        } else {
            buf[o++] = *p;
        }
    }
    snprintf(buf + o, sizeof(buf) - o, "\"}");
    return buf;
}

static void test_assertion_vector(void **state)
{
    struct gauth_sa sa;
    struct bsc_buf out;
    const char *j = sa_json(pem, "gateway@sim-project.iam.gserviceaccount.com");

    (void)state;
    assert_int_equal(gauth_sa_parse(j, strlen(j), &sa), BSC_OK);
    assert_null(sa.token_uri);
    bsc_buf_init(&out, 8192);
    assert_int_equal(gauth_assertion(&sa, "https://oauth2.googleapis.com/token", 1700000000, &out),
                     BSC_OK);
    assert_string_equal(out.p, want);
    bsc_buf_cleanup(&out);
    gauth_sa_cleanup(&sa);
}

static void test_refused(void **state)
{
    struct gauth_sa sa;
    struct bsc_buf out;
    const char *j = sa_json(pem, NULL);

    (void)state;
    assert_int_equal(gauth_sa_parse(j, strlen(j), &sa), BSC_EPARSE); /* no client_email */
    assert_int_equal(gauth_sa_parse("[]", 2, &sa), BSC_EPARSE);
    assert_int_equal(gauth_sa_parse("{", 1, &sa), BSC_EPARSE);
    j = sa_json("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n", "a@b");
    assert_int_equal(gauth_sa_parse(j, strlen(j), &sa), BSC_OK);
    bsc_buf_init(&out, 8192);
    assert_int_equal(gauth_assertion(&sa, "https://x", 1, &out), BSC_EINVAL);
    assert_int_equal(out.len, 0);
    bsc_buf_cleanup(&out);
    gauth_sa_cleanup(&sa);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_b64url),
        cmocka_unit_test(test_assertion_vector),
        cmocka_unit_test(test_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
