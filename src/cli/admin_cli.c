/* SPDX-License-Identifier: MIT */
/* admin_cli.c -- `bascule admin --url URL --key KEY [--json] <keys|teams|audit> ...`: builds
 * one admin API request from the command line, sends it with libcurl and prints the answer,
 * as a short human summary or (--json) as the gateway sent it. The admin key can also come
 * from BASCULE_ADMIN_KEY, so that it is not in the process list. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "cli/admin_cli.h"
#include "core/buf.h"
#include "core/json_parse.h"

/* An admin answer nests a few levels; read as before (json-c's
 * default depth, lenient). */
#define ADMIN_JSON_DEPTH 32

struct cli {
    const char *url, *key;
    bool json;
};

static void usage(FILE *f)
{
    fputs("usage: bascule admin --url URL [--key KEY] [--json] COMMAND\n"
          "  keys list\n"
          "  keys show ID\n"
          "  keys create --client NAME --routes R1,R2 [--team TEAM] [--budget USD/PERIOD]\n"
          "              [--rpm N] [--tpm N] [--max-concurrency N] [--expires-at UNIX_S]\n"
          "  keys update ID [the options of create]\n"
          "  keys rotate ID [--grace SECONDS]\n"
          "  keys revoke ID\n"
          "  teams list\n"
          "  teams show ID\n"
          "  teams create ID [--routes R1,R2] [--budget USD/PERIOD] [--rpm N] [--tpm N]\n"
          "              [--max-concurrency N]\n"
          "  teams update ID [the options of create]\n"
          "  teams delete ID\n"
          "  audit [--since MS] [--subject ID]\n"
          "The key may also be given in BASCULE_ADMIN_KEY.\n",
          f);
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    return bsc_buf_append(ud, p, size * n) == BSC_OK ? size * n : 0;
}

/* Sends <method> <path> with <body> (NULL: none); the answer in <out>, its status returned
 * (0: no answer). */
static long call(const struct cli *c, const char *method, const char *path, const char *body,
                 struct bsc_buf *out)
{
    CURL *h = curl_easy_init();
    struct curl_slist *hdrs = NULL;
    char url[2048], auth[1024];
    long status = 0;
    CURLcode rc;

    if (!h)
        return 0;
    snprintf(url, sizeof(url), "%s/admin/%s", c->url, path);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", c->key);
    hdrs = curl_slist_append(hdrs, auth);
    hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 30000L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
    if (body)
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    rc = curl_easy_perform(h);
    if (rc == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    else
        fprintf(stderr, "bascule admin: %s: %s\n", url, curl_easy_strerror(rc));
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    explicit_bzero(auth, sizeof(auth));
    return status;
}

/* ---- human output ---- */

static const char *str(struct json_object *o, const char *name)
{
    struct json_object *v;

    return json_object_object_get_ex(o, name, &v) && v ? json_object_get_string(v) : "-";
}

static void print_key(struct json_object *k)
{
    struct json_object *routes, *bud;
    char rs[256] = "", budget[64] = "-";

    if (json_object_object_get_ex(k, "routes", &routes) && json_object_is_type(routes, json_type_array))
        for (size_t i = 0; i < json_object_array_length(routes); i++)
            snprintf(rs + strlen(rs), sizeof(rs) - strlen(rs), "%s%s", i ? "," : "",
                     json_object_get_string(json_object_array_get_idx(routes, i)));
    if (json_object_object_get_ex(k, "budget", &bud) && bud)
        snprintf(budget, sizeof(budget), "%s/%s", str(bud, "usd"), str(bud, "period"));
    printf("%-22s %-8s %-16s %-8s %-24s %-10s %s\n", str(k, "id"), str(k, "source"),
           str(k, "client"), str(k, "status"), rs, str(k, "spend_usd"), budget);
}

static void print_team(struct json_object *t)
{
    struct json_object *routes, *bud, *keys;
    char rs[256] = "", budget[64] = "-";

    if (json_object_object_get_ex(t, "routes", &routes) && json_object_is_type(routes, json_type_array))
        for (size_t i = 0; i < json_object_array_length(routes); i++)
            snprintf(rs + strlen(rs), sizeof(rs) - strlen(rs), "%s%s", i ? "," : "",
                     json_object_get_string(json_object_array_get_idx(routes, i)));
    if (!rs[0])
        snprintf(rs, sizeof(rs), "*");
    if (json_object_object_get_ex(t, "budget", &bud) && bud)
        snprintf(budget, sizeof(budget), "%s/%s", str(bud, "usd"), str(bud, "period"));
    printf("%-22s %-24s %-8s %-10s %-12s %zu\n", str(t, "id"), rs, str(t, "rpm"),
           str(t, "spend_usd"), budget,
           json_object_object_get_ex(t, "keys", &keys) && json_object_is_type(keys, json_type_array)
               ? json_object_array_length(keys)
               : 0);
}

static void print_teams(struct json_object *arr)
{
    printf("%-22s %-24s %-8s %-10s %-12s %s\n", "ID", "ROUTES", "RPM", "SPEND_USD", "BUDGET",
           "KEYS");
    for (size_t i = 0; i < json_object_array_length(arr); i++)
        print_team(json_object_array_get_idx(arr, i));
}

/* A team's view (no "source", unlike a key's, and its "keys" are ids). */
static bool is_team(struct json_object *o)
{
    struct json_object *v;

    return json_object_object_get_ex(o, "id", &v) && !json_object_object_get_ex(o, "source", &v) &&
           !json_object_object_get_ex(o, "client", &v);
}

static void print_human(struct json_object *o)
{
    struct json_object *arr, *err;

    if (json_object_object_get_ex(o, "error", &err)) {
        printf("error: %s (%s)\n", str(err, "message"), str(err, "code"));
        return;
    }
    if (json_object_object_get_ex(o, "teams", &arr) && json_object_is_type(arr, json_type_array)) {
        print_teams(arr);
        return;
    }
    if (is_team(o)) {
        print_team(o);
        return;
    }
    if (json_object_object_get_ex(o, "keys", &arr)) {
        printf("%-22s %-8s %-16s %-8s %-24s %-10s %s\n", "ID", "SOURCE", "CLIENT", "STATUS",
               "ROUTES", "SPEND_USD", "BUDGET");
        for (size_t i = 0; i < json_object_array_length(arr); i++)
            print_key(json_object_array_get_idx(arr, i));
        return;
    }
    if (json_object_object_get_ex(o, "entries", &arr)) {
        for (size_t i = 0; i < json_object_array_length(arr); i++) {
            struct json_object *e = json_object_array_get_idx(arr, i);

            printf("%s  %-12s %-16s %s\n", str(e, "time_ms"), str(e, "admin"), str(e, "action"),
                   str(e, "subject"));
        }
        return;
    }
    print_key(o);
    if (json_object_object_get_ex(o, "secret", &err))
        printf("secret: %s\n(shown once: store it now)\n", json_object_get_string(err));
}

static int finish(const struct cli *c, long status, struct bsc_buf *out)
{
    struct json_object *o = NULL;

    if (!status) {
        bsc_buf_cleanup(out);
        return 1;
    }
    if (c->json) {
        fwrite(out->p, 1, out->len, stdout);
        fputc('\n', stdout);
    } else if ((o = bsc_json_parse(bsc_buf_str(out), ADMIN_JSON_DEPTH, BSC_JSON_LENIENT,
                                   NULL))) {
        print_human(o);
        json_object_put(o);
    } else {
        printf("HTTP %ld\n", status);
    }
    bsc_buf_cleanup(out);
    return status >= 200 && status < 300 ? 0 : 1;
}

/* ---- commands ---- */

/* The fields of create/update from the options after the verb; NULL on a bad option. */
static struct json_object *key_fields(int argc, char **argv)
{
    static const struct option opts[] = {
        {"client", required_argument, NULL, 'c'}, {"routes", required_argument, NULL, 'r'},
        {"budget", required_argument, NULL, 'b'}, {"rpm", required_argument, NULL, 'p'},
        {"tpm", required_argument, NULL, 't'},    {"max-concurrency", required_argument, NULL, 'm'},
        {"expires-at", required_argument, NULL, 'e'}, {"team", required_argument, NULL, 'T'},
        {NULL, 0, NULL, 0}};
    struct json_object *o = json_object_new_object();
    int ch;

    optind = 1;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'c': json_object_object_add(o, "client", json_object_new_string(optarg)); break;
        case 'T': json_object_object_add(o, "team", json_object_new_string(optarg)); break;
        case 'b': json_object_object_add(o, "budget", json_object_new_string(optarg)); break;
        case 'r': {
            struct json_object *arr = json_object_new_array();
            char *copy = strdup(optarg), *save = NULL;

            for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
                json_object_array_add(arr, json_object_new_string(t));
            free(copy);
            json_object_object_add(o, "routes", arr);
            break;
        }
        case 'p': json_object_object_add(o, "rpm", json_object_new_int64(atoll(optarg))); break;
        case 't': json_object_object_add(o, "tpm", json_object_new_int64(atoll(optarg))); break;
        case 'm':
            json_object_object_add(o, "max_concurrency", json_object_new_int64(atoll(optarg)));
            break;
        case 'e':
            json_object_object_add(o, "expires_at", json_object_new_int64(atoll(optarg)));
            break;
        default: json_object_put(o); return NULL;
        }
    }
    return o;
}

static int send_obj(const struct cli *c, const char *method, const char *path,
                    struct json_object *o)
{
    struct bsc_buf out;
    long status;

    bsc_buf_init(&out, 64u << 20);
    status = call(c, method, path, o ? json_object_to_json_string(o) : NULL, &out);
    json_object_put(o);
    return finish(c, status, &out);
}

static int keys_cmd(const struct cli *c, int argc, char **argv)
{
    const char *verb = argc > 0 ? argv[0] : "";
    char path[512];

    if (strcmp(verb, "list") == 0 && argc == 1)
        return send_obj(c, "GET", "keys", NULL);
    if (strcmp(verb, "create") == 0) {
        struct json_object *o = key_fields(argc, argv);

        return o && optind == argc ? send_obj(c, "POST", "keys", o) : (json_object_put(o), 2);
    }
    if (argc < 2)
        return 2;
    snprintf(path, sizeof(path), "keys/%s", argv[1]);
    if (strcmp(verb, "show") == 0 && argc == 2)
        return send_obj(c, "GET", path, NULL);
    if (strcmp(verb, "revoke") == 0 && argc == 2)
        return send_obj(c, "DELETE", path, NULL);
    if (strcmp(verb, "update") == 0) {
        struct json_object *o = key_fields(argc - 1, argv + 1);

        return o && optind == argc - 1 ? send_obj(c, "PATCH", path, o) : (json_object_put(o), 2);
    }
    if (strcmp(verb, "rotate") == 0) {
        struct json_object *o = json_object_new_object();

        if (argc == 4 && strcmp(argv[2], "--grace") == 0)
            json_object_object_add(o, "grace_s", json_object_new_int64(atoll(argv[3])));
        else if (argc != 2)
            return json_object_put(o), 2;
        snprintf(path, sizeof(path), "keys/%s/rotate", argv[1]);
        return send_obj(c, "POST", path, o);
    }
    return 2;
}

/* teams list | show ID | create ID [opts] | update ID [opts] | delete ID */
static int teams_cmd(const struct cli *c, int argc, char **argv)
{
    const char *verb = argc > 0 ? argv[0] : "";
    char path[512];
    struct json_object *o;

    if (strcmp(verb, "list") == 0 && argc == 1)
        return send_obj(c, "GET", "teams", NULL);
    if (argc < 2)
        return 2;
    snprintf(path, sizeof(path), "teams/%s", argv[1]);
    if (strcmp(verb, "show") == 0 && argc == 2)
        return send_obj(c, "GET", path, NULL);
    if (strcmp(verb, "delete") == 0 && argc == 2)
        return send_obj(c, "DELETE", path, NULL);
    if (strcmp(verb, "create") != 0 && strcmp(verb, "update") != 0)
        return 2;
    o = key_fields(argc - 1, argv + 1);
    if (!o || optind != argc - 1)
        return json_object_put(o), 2;
    if (strcmp(verb, "update") == 0)
        return send_obj(c, "PATCH", path, o);
    json_object_object_add(o, "id", json_object_new_string(argv[1]));
    return send_obj(c, "POST", "teams", o);
}

static int audit_cmd(const struct cli *c, int argc, char **argv)
{
    char path[512] = "audit?";

    for (int i = 1; i + 1 < argc + 1; i += 2) {
        if (i + 1 >= argc)
            return 2;
        if (strcmp(argv[i], "--since") == 0)
            snprintf(path + strlen(path), sizeof(path) - strlen(path), "since=%s&", argv[i + 1]);
        else if (strcmp(argv[i], "--subject") == 0)
            snprintf(path + strlen(path), sizeof(path) - strlen(path), "subject=%s&", argv[i + 1]);
        else
            return 2;
    }
    path[strlen(path) - 1] = '\0'; /* the last '&' or the '?' */
    return send_obj(c, "GET", path, NULL);
}

int admin_cli_main(int argc, char **argv)
{
    struct cli c = {.key = getenv("BASCULE_ADMIN_KEY")};
    int i = 1, rc = 2;

    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--json") == 0)
            c.json = true;
        else if (strcmp(argv[i], "--url") == 0 && i + 1 < argc)
            c.url = argv[++i];
        else if (strcmp(argv[i], "--key") == 0 && i + 1 < argc)
            c.key = argv[++i];
        else if (strcmp(argv[i], "--help") == 0)
            return usage(stdout), 0;
        else
            break;
    }
    if (c.url && c.key && i < argc) {
        if (strcmp(argv[i], "keys") == 0)
            rc = keys_cmd(&c, argc - i - 1, argv + i + 1);
        else if (strcmp(argv[i], "audit") == 0)
            rc = audit_cmd(&c, argc - i, argv + i);
        else if (strcmp(argv[i], "teams") == 0)
            rc = teams_cmd(&c, argc - i - 1, argv + i + 1);
    }
    if (rc == 2)
        usage(stderr);
    return rc;
}
