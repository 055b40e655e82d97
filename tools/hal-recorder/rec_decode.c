/*
 * rec_decode.c: how the recorder writes the driver's types into a trace line (README.md, "The
 * line"). Structures behind pointers are read with rec_read, so a bad pointer is recorded as
 * its address instead of crashing the program before the driver could reject it. Names of
 * enumerators are written beside their numbers ("side":1,"side_name":"MEM_DEV_SIDE") so that a
 * trace reads without the header; the numbers stay the authority.
 */
#include "hal_recorder.h"

#include <string.h>

/* ---- names -------------------------------------------------------------------------------- */

struct rec_err {
    unsigned code;
    const char* name;
};
static const struct rec_err rec_errors[] = {
    {0, "DRV_ERROR_NONE"}, {1, "DRV_ERROR_NO_DEVICE"}, {2, "DRV_ERROR_INVALID_DEVICE"},
    {3, "DRV_ERROR_INVALID_VALUE"}, {4, "DRV_ERROR_INVALID_HANDLE"},
    {5, "DRV_ERROR_INVALID_MALLOC_TYPE"}, {6, "DRV_ERROR_OUT_OF_MEMORY"},
    {7, "DRV_ERROR_INNER_ERR"}, {8, "DRV_ERROR_PARA_ERROR"}, {9, "DRV_ERROR_UNINIT"},
    {10, "DRV_ERROR_REPEATED_INIT"}, {11, "DRV_ERROR_NOT_EXIST"},
    {12, "DRV_ERROR_REPEATED_USERD"}, {13, "DRV_ERROR_BUSY"}, {14, "DRV_ERROR_NO_RESOURCES"},
    {16, "DRV_ERROR_WAIT_TIMEOUT"}, {17, "DRV_ERROR_IOCRL_FAIL"}, {23, "DRV_ERROR_CLIENT_BUSY"},
    {25, "DRV_ERROR_SOCKET_CLOSE"}, {27, "DRV_ERROR_SEND_MESG"}, {33, "DRV_ERROR_BUS_DOWN"},
    {37, "DRV_ERROR_OVER_LIMIT"}, {38, "DRV_ERROR_FILE_OPS"}, {40, "DRV_ERROR_MALLOC_FAIL"},
    {42, "DRV_ERROR_PROCESS_EXIT"}, {43, "DRV_ERROR_DEV_PROCESS_HANG"},
    {46, "DRV_ERROR_OPER_NOT_PERMITTED"}, {47, "DRV_ERROR_NO_EVENT_RESOURCES"},
    {48, "DRV_ERROR_NO_STREAM_RESOURCES"}, {49, "DRV_ERROR_NO_NOTIFY_RESOURCES"},
    {50, "DRV_ERROR_NO_MODEL_RESOURCES"}, {51, "DRV_ERROR_TRY_AGAIN"},
    {58, "DRV_ERROR_MEMORY_OPT_FAIL"}, {74, "DRV_ERROR_COPY_USER_FAIL"},
    {75, "DRV_ERROR_QUEUE_EMPTY"}, {76, "DRV_ERROR_QUEUE_FULL"}, {79, "DRV_ERROR_BAD_ADDRESS"},
    {82, "DRV_ERROR_CDQ_ABNORMAL"}, {83, "DRV_ERROR_CDQ_NOT_EXIST"},
    {84, "DRV_ERROR_NO_CDQ_RESOURCES"}, {89, "DRV_ERROR_RESUME"},
    {0xfffe, "DRV_ERROR_NOT_SUPPORT"},
};

const char* rec_error_name(unsigned code) {
    for (size_t i = 0; i < sizeof rec_errors / sizeof rec_errors[0]; i++)
        if (rec_errors[i].code == code)
            return rec_errors[i].name;
    return NULL;
}

const char* const rec_side_names[4] = {"MEM_HOST_SIDE", "MEM_DEV_SIDE", "MEM_HOST_NUMA_SIDE",
                                       "MEM_MAX_SIDE"};
static const char* const rec_pg_names[4] = {"MEM_NORMAL_PAGE_TYPE", "MEM_HUGE_PAGE_TYPE",
                                            "MEM_GIANT_PAGE_TYPE", "MEM_MAX_PAGE_TYPE"};
static const char* const rec_mem_type_names[6] = {"MEM_HBM_TYPE", "MEM_DDR_TYPE",
                                                  "MEM_P2P_HBM_TYPE", "MEM_P2P_DDR_TYPE",
                                                  "MEM_TS_DDR_TYPE", "MEM_MAX_TYPE"};
static const char* const rec_access_names[4] = {"MEM_ACCESS_TYPE_NONE", "MEM_ACCESS_TYPE_READ",
                                                NULL, "MEM_ACCESS_TYPE_READWRITE"};
const char* const rec_handle_type_names[4] = {"MEM_HANDLE_TYPE_NONE", "MEM_HANDLE_TYPE_FABRIC",
                                              "MEM_HANDLE_TYPE_POSIX", "MEM_HANDLE_TYPE_MAX"};
const char* const rec_granularity_names[3] = {"MEM_ALLOC_GRANULARITY_MINIMUM",
                                              "MEM_ALLOC_GRANULARITY_RECOMMENDED",
                                              "MEM_ALLOC_GRANULARITY_INVALID"};
static const char* const rec_uvm_type_names[4] = {
    "DRV_UVM_LOCATION_TYPE_INVALID", "DRV_UVM_LOCATION_TYPE_DEVICE", "DRV_UVM_LOCATION_TYPE_HOST",
    "DRV_UVM_LOCATION_TYPE_HOST_NUMA"};
const char* const rec_advise_names[6] = {"READ_MOSTLY",           "UNSET_READ_MOSTLY",
                                         "PREFER_LOCATION",       "UNSET_PREFER_LOCATION",
                                         "ACCESS_BY_LOCATION",    "UNSET_ACCESS_BY_LOCATION"};
static const char* const rec_memcpy_names[4] = {"DRV_MEMCPY_HOST_TO_HOST",
                                                "DRV_MEMCPY_HOST_TO_DEVICE",
                                                "DRV_MEMCPY_DEVICE_TO_HOST",
                                                "DRV_MEMCPY_DEVICE_TO_DEVICE"};
static const char* const rec_close_names[3] = {"DEV_CLOSE_HOST_DEVICE", "DEV_CLOSE_ONLY_HOST",
                                               "DEV_CLOSE_HOST_USER"};
const char* const rec_mem_info_names[6] = {NULL,
                                           "MEM_INFO_TYPE_DDR_SIZE",
                                           "MEM_INFO_TYPE_HBM_SIZE",
                                           "MEM_INFO_TYPE_DDR_P2P_SIZE",
                                           "MEM_INFO_TYPE_HBM_P2P_SIZE",
                                           "MEM_INFO_TYPE_ADDR_CHECK"};
const char* const rec_feature_names[12] = {
    [2] = "FEATURE_SVM_GET_USER_MALLOC_ATTR", [6] = "FEATURE_SVM_VMM_NORMAL_GRANULARITY",
    [8] = "FEATURE_SVM_MEM_HOST_UVA", [11] = "FEATURE_SVM_MEM_REGISTER_QUERY_AND_GET_ATTR"};
const char* const rec_range_attr_names[10] = {
    NULL,
    "MEM_RANGE_ATTR_READ_MOSTLY",
    "MEM_RANGE_ATTR_PREFERRED_LOC",
    "MEM_RANGE_ATTR_ACCESS_BY",
    "MEM_RANGE_ATTR_PREFERRED_LOC_TYPE",
    "MEM_RANGE_ATTR_PREFERRED_LOC_ID",
    "MEM_RANGE_ATTR_LAST_PREFETCH_LOC",
    "MEM_RANGE_ATTR_LAST_PREFETCH_LOC_TYPE",
    "MEM_RANGE_ATTR_LAST_PREFETCH_LOC_ID",
    "MEM_RANGE_ATTR_MAX"};

/* "<key>":v and, when the value has a name, "<key>_name":"NAME". */
void dec_enum(struct jl* j, const char* key, unsigned v, const char* const* names, unsigned n) {
    char name_key[48];
    size_t k = strlen(key);
    jl_u64(j, key, v);
    if (v >= n || names[v] == NULL || k + sizeof "_name" > sizeof name_key)
        return;
    memcpy(name_key, key, k);
    memcpy(name_key + k, "_name", sizeof "_name");
    jl_str(j, name_key, names[v], 64);
}

/* A struct argument behind a pointer: false (and null or the address written) when it cannot be
 * decoded. */
static bool fetch(struct jl* j, const char* key, void* dst, const void* p, size_t n) {
    if (p == NULL) {
        jl_null(j, key);
        return false;
    }
    if (!rec_read(dst, p, n)) {
        jl_ptr(j, key, p);
        return false;
    }
    return true;
}

static void u32_array(struct jl* j, const char* key, const unsigned* v, size_t n) {
    jl_array(j, key);
    for (size_t i = 0; i < n; i++)
        jl_u64(j, NULL, v[i]);
    jl_close(j);
}

/* ---- structures --------------------------------------------------------------------------- */

static void prop_fields(struct jl* j, const struct drv_mem_prop* v) {
    dec_enum(j, "side", v->side, REC_NAMES(rec_side_names));
    jl_u64(j, "devid", v->devid);
    jl_u64(j, "module_id", v->module_id);
    dec_enum(j, "pg_type", v->pg_type, REC_NAMES(rec_pg_names));
    dec_enum(j, "mem_type", v->mem_type, REC_NAMES(rec_mem_type_names));
    jl_hex(j, "reserve", v->reserve);
}

void dec_prop(struct jl* j, const char* key, const struct drv_mem_prop* p) {
    struct drv_mem_prop v;
    if (!fetch(j, key, &v, p, sizeof v))
        return;
    jl_object(j, key);
    prop_fields(j, &v);
    jl_close(j);
}

static void location_fields(struct jl* j, const struct drv_mem_location* v) {
    jl_u64(j, "id", v->id);
    dec_enum(j, "side", (unsigned)v->side, REC_NAMES(rec_side_names));
}

void dec_location(struct jl* j, const char* key, const struct drv_mem_location* p) {
    struct drv_mem_location v;
    if (!fetch(j, key, &v, p, sizeof v))
        return;
    jl_object(j, key);
    location_fields(j, &v);
    jl_close(j);
}

void dec_access_descs(struct jl* j, const char* key, const struct drv_mem_access_desc* p,
                      size_t count) {
    size_t n = count < REC_ARRAY_MAX ? count : REC_ARRAY_MAX;
    if (p == NULL) {
        jl_null(j, key);
        return;
    }
    jl_array(j, key);
    for (size_t i = 0; i < n; i++) {
        struct drv_mem_access_desc v;
        if (!rec_read(&v, p + i, sizeof v)) {
            jl_ptr(j, NULL, p + i);
            break;
        }
        struct jl_mark m = jl_element_begin(j);
        jl_object(j, NULL);
        dec_enum(j, "type", (unsigned)v.type, REC_NAMES(rec_access_names));
        jl_object(j, "location");
        location_fields(j, &v.location);
        jl_close(j);
        u32_array(j, "rsv", v.rsv, 2);
        jl_close(j);
        jl_element_end(j, &m);
    }
    jl_close(j);
}

void dec_share_handle(struct jl* j, const char* key, const struct MemShareHandle* p) {
    struct MemShareHandle v;
    if (!fetch(j, key, &v, p, sizeof v))
        return;
    /* The real driver fills the first 20 bytes as five 32-bit fields (type, SDID, exporter
     * logical devid, exporter phy id, share id: hal.md 3.5); the rest is shown as it is. */
    unsigned u[5];
    memcpy(u, v.share_info, sizeof u);
    jl_object(j, key);
    u32_array(j, "u32", u, 5);
    jl_bytes(j, "hex", v.share_info, sizeof v.share_info);
    jl_close(j);
}

static void attr_value(struct jl* j, const char* key, const char* first, unsigned v,
                       const unsigned rsv[8]) {
    jl_object(j, key);
    jl_u64(j, first, v);
    u32_array(j, "rsv", rsv, 8);
    jl_close(j);
}

void dec_share_attr(struct jl* j, const char* key, const struct ShareHandleAttr* p) {
    struct ShareHandleAttr v;
    if (fetch(j, key, &v, p, sizeof v))
        attr_value(j, key, "enableFlag", v.enableFlag, v.rsv);
}

void dec_handle_attr(struct jl* j, const char* key, const struct HandleAttr* p) {
    struct HandleAttr v;
    if (fetch(j, key, &v, p, sizeof v))
        attr_value(j, key, "mem_map_route", v.mem_map_route, v.rsv);
}

void dec_share_info(struct jl* j, const char* key, const struct ShareHandleGetInfo* p) {
    struct ShareHandleGetInfo v;
    if (fetch(j, key, &v, p, sizeof v))
        attr_value(j, key, "phyDevid", v.phyDevid, v.reserve);
}

static void uvm_fields(struct jl* j, const struct drv_uvm_location* v) {
    dec_enum(j, "type", (unsigned)v->type, REC_NAMES(rec_uvm_type_names));
    jl_i64(j, "id", v->id);
}

void dec_uvm_location(struct jl* j, const char* key, const struct drv_uvm_location* p) {
    struct drv_uvm_location v;
    if (!fetch(j, key, &v, p, sizeof v))
        return;
    jl_object(j, key);
    uvm_fields(j, &v);
    jl_close(j);
}

void dec_uvm_locations(struct jl* j, const char* key, const struct drv_uvm_location* p,
                       size_t n) {
    if (p == NULL) {
        jl_null(j, key);
        return;
    }
    jl_array(j, key);
    for (size_t i = 0; i < n && i < REC_ARRAY_MAX; i++) {
        struct drv_uvm_location v;
        if (!rec_read(&v, p + i, sizeof v)) {
            jl_ptr(j, NULL, p + i);
            break;
        }
        struct jl_mark m = jl_element_begin(j);
        jl_object(j, NULL);
        uvm_fields(j, &v);
        jl_close(j);
        jl_element_end(j, &m);
    }
    jl_close(j);
}

void dec_dvattribute(struct jl* j, const char* key, const struct DVattribute* p) {
    static const char* const bits[] = {
        "DV_MEM_SVM",           "DV_MEM_SVM_HOST",     "DV_MEM_SVM_DEVICE", "DV_MEM_LOCK_HOST",
        "DV_MEM_LOCK_DEV",      "DV_MEM_LOCK_DEV_DVPP", "DV_MEM_LOCK_HOST_AGENT",
        "DV_MEM_USER_MALLOC",   "DV_MEM_USER_REGISTER", "DV_MEM_UVM",        "DV_MEM_SOMA"};
    struct DVattribute v;
    if (!fetch(j, key, &v, p, sizeof v))
        return;
    jl_object(j, key);
    jl_hex(j, "memType", v.memType);
    jl_array(j, "memType_bits");
    for (unsigned b = 0; b < sizeof bits / sizeof bits[0]; b++)
        if (v.memType & (1u << b))
            jl_str(j, NULL, bits[b], 64);
    jl_close(j);
    jl_u64(j, "resv1", v.resv1);
    jl_u64(j, "resv2", v.resv2);
    jl_u64(j, "devId", v.devId);
    jl_u64(j, "pageSize", v.pageSize);
    u32_array(j, "resv", v.resv, DV_MEM_RESV);
    jl_close(j);
}

void dec_mem_info(struct jl* j, const char* key, const struct MemInfo* p) {
    struct MemPhyInfo v; /* the member every caller reads (hal.md 3.10) */
    if (!fetch(j, key, &v, p, sizeof v))
        return;
    jl_object(j, key);
    jl_u64(j, "total", v.total);
    jl_u64(j, "free", v.free);
    jl_u64(j, "huge_total", v.huge_total);
    jl_u64(j, "huge_free", v.huge_free);
    jl_u64(j, "giant_total", v.giant_total);
    jl_u64(j, "giant_free", v.giant_free);
    jl_close(j);
}

void dec_memcpy_info(struct jl* j, const char* key, const struct memcpy_info* p) {
    struct memcpy_info v;
    if (!fetch(j, key, &v, p, sizeof v))
        return;
    jl_object(j, key);
    dec_enum(j, "dir", (unsigned)v.dir, REC_NAMES(rec_memcpy_names));
    jl_u64(j, "devid", v.devid);
    jl_array(j, "reserve");
    jl_hex(j, NULL, v.reserve[0]);
    jl_hex(j, NULL, v.reserve[1]);
    jl_close(j);
    jl_close(j);
}

void dec_close_in(struct jl* j, const char* key, const halDevCloseIn* p) {
    halDevCloseIn v;
    if (!fetch(j, key, &v, p, sizeof v))
        return;
    jl_object(j, key);
    dec_enum(j, "close_type", v.close_type, REC_NAMES(rec_close_names));
    jl_u64(j, "reserve0", v.reserve0);
    jl_close(j);
}

/* ---- flag words --------------------------------------------------------------------------- */

void dec_alloc_flags(struct jl* j, const char* key, unsigned long long f) {
    static const char* const virt[16] = {"MEM_SVM",        "MEM_DEV",     "MEM_HOST",
                                         "MEM_DVPP",       "MEM_HOST_AGENT", "MEM_RESERVE",
                                         "MEM_HOST_UVA",   "MEM_UVM"};
    static const struct {
        unsigned long long bit;
        const char* name;
    } bits[] = {{MEM_CONTIGUOUS_PHY, "MEM_CONTIGUOUS_PHY"},
                {MEM_ADVISE_P2P, "MEM_ADVISE_P2P"},
                {MEM_ADVISE_4G, "MEM_ADVISE_4G"},
                {MEM_ADVISE_TS, "MEM_ADVISE_TS"},
                {MEM_READONLY, "MEM_READONLY"},
                {MEM_HOST_RW_DEV_RO, "MEM_HOST_RW_DEV_RO"},
                {MEM_PAGE_GIANT, "MEM_PAGE_GIANT"},
                {MEM_DEV_CP_ONLY, "MEM_DEV_CP_ONLY"}};
    unsigned long long known = MEM_DEVID_MASK | (0xFULL << MEM_VIRT_BIT) | MEM_TYPE_HBM |
                               MEM_PAGE_HUGE | (0x1FULL << MEM_ALIGN_BIT) |
                               (MEM_MODULE_ID_MASK << MEM_MODULE_ID_BIT);
    unsigned v = (unsigned)((f >> MEM_VIRT_BIT) & 0xF);
    jl_object(j, key);
    jl_u64(j, "devid", f & MEM_DEVID_MASK);
    if (virt[v] != NULL)
        jl_str(j, "virt", virt[v], 32);
    else
        jl_hex(j, "virt", (unsigned long long)v << MEM_VIRT_BIT);
    jl_str(j, "phy", (f & MEM_TYPE_HBM) ? "MEM_TYPE_HBM" : "MEM_TYPE_DDR", 32);
    jl_str(j, "page", (f & MEM_PAGE_HUGE) ? "MEM_PAGE_HUGE" : "MEM_PAGE_NORMAL", 32);
    jl_u64(j, "align_exp", (f >> MEM_ALIGN_BIT) & 0x1F);
    jl_array(j, "bits");
    for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++) {
        known |= bits[i].bit;
        if (f & bits[i].bit)
            jl_str(j, NULL, bits[i].name, 32);
    }
    jl_close(j);
    jl_u64(j, "module_id", (f >> MEM_MODULE_ID_BIT) & MEM_MODULE_ID_MASK);
    if (f & ~known)
        jl_hex(j, "other", f & ~known);
    jl_close(j);
}

void dec_reserve_flags(struct jl* j, const char* key, unsigned long long f) {
    unsigned long long known = 0xFFULL | MEM_RSV_TYPE_DEVICE_SHARE | MEM_RSV_TYPE_REMOTE_MAP;
    jl_object(j, key);
    dec_enum(j, "page_type", (unsigned)(f & 0xFF), REC_NAMES(rec_pg_names));
    jl_bool(j, "DEVICE_SHARE", (f & MEM_RSV_TYPE_DEVICE_SHARE) != 0);
    jl_bool(j, "REMOTE_MAP", (f & MEM_RSV_TYPE_REMOTE_MAP) != 0);
    if (f & ~known)
        jl_hex(j, "other", f & ~known);
    jl_close(j);
}

/* ---- arrays and scalars behind pointers ---------------------------------------------------- */

void dec_u32s(struct jl* j, const char* key, const void* p, size_t n, bool is_signed) {
    const unsigned char* b = p;
    if (p == NULL) {
        jl_null(j, key);
        return;
    }
    jl_array(j, key);
    for (size_t i = 0; i < n && i < REC_ARRAY_MAX; i++) {
        unsigned v;
        if (!rec_read(&v, b + i * sizeof v, sizeof v)) {
            jl_ptr(j, NULL, b + i * sizeof v);
            break;
        }
        if (is_signed)
            jl_i64(j, NULL, (int)v);
        else
            jl_u64(j, NULL, v);
    }
    jl_close(j);
}

void dec_u64s(struct jl* j, const char* key, const void* p, size_t n, bool as_hex) {
    const unsigned char* b = p;
    if (p == NULL) {
        jl_null(j, key);
        return;
    }
    jl_array(j, key);
    for (size_t i = 0; i < n && i < REC_ARRAY_MAX; i++) {
        unsigned long long v;
        if (!rec_read(&v, b + i * sizeof v, sizeof v)) {
            jl_ptr(j, NULL, b + i * sizeof v);
            break;
        }
        if (as_hex)
            jl_hex(j, NULL, v);
        else
            jl_u64(j, NULL, v);
    }
    jl_close(j);
}

void dec_bytes(struct jl* j, const char* key, const void* p, size_t n) {
    unsigned char v[64];
    if (n > sizeof v)
        n = sizeof v;
    if (fetch(j, key, v, p, n))
        jl_bytes(j, key, v, n);
}

void dec_string(struct jl* j, const char* key, const char* p, size_t max) {
    char v[128];
    size_t n = max < sizeof v ? max : sizeof v;
    /* byte by byte when the whole cannot be read: the buffer may end in a shorter mapping */
    size_t i = 0;
    if (p == NULL) {
        jl_null(j, key);
        return;
    }
    if (rec_read(v, p, n)) {
        while (i < n && v[i] != '\0')
            i++;
    } else {
        while (i < n && rec_read(&v[i], p + i, 1) && v[i] != '\0')
            i++;
    }
    jl_str(j, key, v, i);
}

void dec_scalar(struct jl* j, const char* key, const void* p, size_t size, bool is_signed,
                bool as_hex) {
    union {
        unsigned u32;
        unsigned long long u64;
    } v;
    if (!fetch(j, key, &v, p, size))
        return;
    unsigned long long u = size == 4 ? v.u32 : v.u64;
    if (as_hex)
        jl_hex(j, key, u);
    else if (is_signed)
        jl_i64(j, key, size == 4 ? (long long)(int)v.u32 : (long long)v.u64);
    else
        jl_u64(j, key, u);
}
