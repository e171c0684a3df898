/* The one list of the backends built into the library beside the host's: adding a backend is
 * a folder under lib/backends/ and one line here. And the names of status codes, the library's
 * own (cltensor/status.h) and the backends'. */
#include "backends/backend.h"

#ifdef CLT_HAVE_OPENCL
extern const clt__backend_registry clt__opencl_registry;
#endif

const clt__backend_registry *const clt__backends[] = {
#ifdef CLT_HAVE_OPENCL
    &clt__opencl_registry,
#endif
    NULL,
};

/* The name of a backend's own status code and its description in *text; NULL for a code no
 * backend knows. */
static const char *backend_status_name(clt_status status, const char **text)
{
    for (const clt__backend_registry *const *b = clt__backends; *b; b++) {
        const char *name = (*b)->status_name ? (*b)->status_name(status, text) : NULL;
        if (name)
            return name;
    }
    return NULL;
}

const char *clt_status_name(clt_status status)
{
    switch (status) {
#define CLT__NAME(name, value, text)                                                           \
    case value: return "CLT_" #name;
        CLT_STATUS_MAP(CLT__NAME)
#undef CLT__NAME
    default: {
        const char *text, *name = backend_status_name(status, &text);
        return name ? name : "UNKNOWN";
    }
    }
}

const char *clt_status_str(clt_status status)
{
    switch (status) {
#define CLT__TEXT(name, value, text)                                                           \
    case value: return text;
        CLT_STATUS_MAP(CLT__TEXT)
#undef CLT__TEXT
    default: {
        const char *text = "unknown status";
        backend_status_name(status, &text);
        return text;
    }
    }
}
