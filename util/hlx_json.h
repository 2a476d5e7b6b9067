/* JSON input files read through jansson, with file:line:column in every error.
 * jansson reports positions only for syntax errors; hlx_jdoc keeps the source text and
 * re-scans it to locate a key or value by its path ("/layers", "/links/0/bw_gbps").
 * Objects are read through field tables (key, type, bounds, help), so unknown, duplicate,
 * mistyped, missing and out-of-range keys all get one precise message. */
#ifndef HLX_JSON_H
#define HLX_JSON_H

#include <helix/status.h>
#include <jansson.h>
#include <stddef.h>

typedef struct hlx_jdoc hlx_jdoc_t;

typedef enum {
    HLX_JT_INT,     /* int, must be integral */
    HLX_JT_DOUBLE,  /* double, finite */
    HLX_JT_STRING,  /* char[strsize] */
    HLX_JT_BOOL,    /* int 0/1 */
    HLX_JT_ANY      /* not stored: caller reads it (nested object or array) */
} hlx_jtype_t;

typedef struct hlx_jfield {
    const char *key;
    hlx_jtype_t type;
    size_t      offset;   /* offsetof() into the output struct */
    int         required;
    double      min, max; /* bounds for numbers (inclusive); min > max means unbounded;
                           * strings: min >= 1 refuses an empty string */
    size_t      strsize;  /* for strings: size of the char array */
    const char *help;
} hlx_jfield_t;

#define HLX_JDOC_MAX_BYTES (64u << 20)

/* Loads and parses a file (duplicate keys rejected) of at most 64 MiB. On error *doc_p is
 * still set (unless out of memory), so hlx_jdoc_error() can be printed; free with
 * hlx_jdoc_free(). A missing file is HLX_ERR_NOT_FOUND, a directory or a file too large
 * HLX_ERR_INVALID (see hlx_file_read), bad JSON HLX_ERR_PARSE. */
hlx_status_t hlx_jdoc_load_file(const char *path, hlx_jdoc_t **doc_p);
/* The same, naming the file's role in messages ("model file"). */
hlx_status_t hlx_jdoc_load_file_as(const char *path, const char *what, hlx_jdoc_t **doc_p);
/* Same for text held in memory; name is used in messages. */
hlx_status_t hlx_jdoc_load_string(const char *name, const char *text, hlx_jdoc_t **doc_p);
void         hlx_jdoc_free(hlx_jdoc_t *doc);
/* The document's top-level value, or the object hlx_jdoc_scope entered. */
json_t      *hlx_jdoc_root(const hlx_jdoc_t *doc);
/* Enters the object at member key of the top level: hlx_jdoc_root returns it and the paths
 * given to hlx_jdoc_fail are taken inside it (a nested configuration read with the reader of
 * a flat one, its errors still at their place in the file). NULL leaves it. HLX_ERR_PARSE
 * (recorded at the member) when the member is not an object; HLX_ERR_NOT_FOUND when it is
 * absent (nothing recorded). */
hlx_status_t hlx_jdoc_scope(hlx_jdoc_t *doc, const char *key);
const char  *hlx_jdoc_name(const hlx_jdoc_t *doc);
/* The last error, already formatted "file:line:column: key: reason". */
const char  *hlx_jdoc_error(const hlx_jdoc_t *doc);

/* Finds where the member at path starts (its key for object members, else the value).
 * Returns 0 and sets *line and *col (1-based) when found. */
int hlx_jdoc_locate(const hlx_jdoc_t *doc, const char *path, int *line, int *col);

/* Records an error at path ("file:line:col: last-key: reason") and returns status. A line
 * longer than the 1024 bytes kept (the size of the callers' err buffers it is copied into)
 * ends in "... (cut: N bytes in all)" instead of being cut silently. */
hlx_status_t hlx_jdoc_fail(hlx_jdoc_t *doc, const char *path, hlx_status_t status,
                           const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Reads obj (found at path) into out using the field table. Unknown keys are refused
 * with the nearest known name; keys of type HLX_JT_ANY are allowed but not stored. */
hlx_status_t hlx_jdoc_read_object(hlx_jdoc_t *doc, json_t *obj, const char *path,
                                  const hlx_jfield_t *fields, size_t nfields, void *out);

/* Writes root (json_dumpf's flags) to path whole or not at all (hlx_out: a temporary file
 * renamed into place, the old file untouched on failure). A failed
 * write is said once in err with its reason ("PATH: writing failed: No space left on
 * device (nothing replaced)"); a path that cannot take a file too (hlx_out_begin). */
hlx_status_t hlx_json_write_file(json_t *root, size_t flags, const char *path, char *err,
                                 size_t errlen);
/* Levenshtein-nearest name among the candidates: at most 3 edits and half of the shorter
 * of the two names (NULL if none is that close). */
const char *hlx_nearest_name(const char *name, const char *const *candidates, size_t n);

#endif
