/*
 * rec_dev.c: the recorder's wrappers of the device-management functions (hal.md 1.1, 2, 3.10):
 * ids, open/close, features, device information, P2P. Each keeps its prototype from
 * hal_decls.h (the compiler checks it) and its parameter names from hal.md 4, which are the
 * keys under "args" and "out".
 */
#include "hal_recorder.h"

#define NS DRV_ERROR_NOT_SUPPORT
#define OK(r) ((r) == DRV_ERROR_NONE)

REC_EXPORT drvError_t halGetAPIVersion(int* version) {
    REC_ENTER(halGetAPIVersion, NS, version);
    jl_ptr(j_, "version", version);
    drvError_t r = NS;
    REC_CALL(r, version);
    if (rec_out(&c_, OK(r)))
        dec_scalar(j_, "version", version, sizeof *version, true, true);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t drvGetDevNum(uint32_t* count) {
    REC_ENTER(drvGetDevNum, NS, count);
    jl_ptr(j_, "count", count);
    drvError_t r = NS;
    REC_CALL(r, count);
    if (rec_out(&c_, OK(r)))
        dec_scalar(j_, "count", count, sizeof *count, false, false);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t drvDeviceGetPhyIdByIndex(uint32_t logicId, uint32_t* phyId) {
    REC_ENTER(drvDeviceGetPhyIdByIndex, NS, logicId, phyId);
    jl_u64(j_, "logicId", logicId);
    jl_ptr(j_, "phyId", phyId);
    drvError_t r = NS;
    REC_CALL(r, logicId, phyId);
    if (rec_out(&c_, OK(r)))
        dec_scalar(j_, "phyId", phyId, sizeof *phyId, false, false);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t drvDeviceGetIndexByPhyId(uint32_t phyId, uint32_t* logicId) {
    REC_ENTER(drvDeviceGetIndexByPhyId, NS, phyId, logicId);
    jl_u64(j_, "phyId", phyId);
    jl_ptr(j_, "logicId", logicId);
    drvError_t r = NS;
    REC_CALL(r, phyId, logicId);
    if (rec_out(&c_, OK(r)))
        dec_scalar(j_, "logicId", logicId, sizeof *logicId, false, false);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halGetHostID(uint32_t* hostId) {
    REC_ENTER(halGetHostID, NS, hostId);
    jl_ptr(j_, "hostId", hostId);
    drvError_t r = NS;
    REC_CALL(r, hostId);
    if (rec_out(&c_, OK(r)))
        dec_scalar(j_, "hostId", hostId, sizeof *hostId, false, false);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halDeviceOpen(uint32_t dev, halDevOpenIn* in, halDevOpenOut* out) {
    REC_ENTER(halDeviceOpen, NS, dev, in, out);
    jl_u64(j_, "dev", dev);
    jl_ptr(j_, "in", in);
    jl_ptr(j_, "out", out);
    drvError_t r = NS;
    REC_CALL(r, dev, in, out);
    rec_out(&c_, OK(r)); /* halDevOpenOut is all reserve words */
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halDeviceClose(uint32_t dev, halDevCloseIn* in) {
    REC_ENTER(halDeviceClose, NS, dev, in);
    jl_u64(j_, "dev", dev);
    dec_close_in(j_, "in", in);
    drvError_t r = NS;
    REC_CALL(r, dev, in);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t drvDeviceOpen(void** info, uint32_t dev) {
    REC_ENTER(drvDeviceOpen, NS, info, dev);
    jl_ptr(j_, "info", info);
    jl_u64(j_, "dev", dev);
    drvError_t r = NS;
    REC_CALL(r, info, dev);
    if (rec_out(&c_, OK(r)))
        dec_scalar(j_, "info", info, sizeof *info, false, true);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t drvDeviceClose(uint32_t dev) {
    REC_ENTER(drvDeviceClose, NS, dev);
    jl_u64(j_, "dev", dev);
    drvError_t r = NS;
    REC_CALL(r, dev);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

/* drvMemDeviceOpen/Close return int but carry drvError_t values: recorded with their names. */
REC_EXPORT int drvMemDeviceOpen(uint32_t dev, int unusedFd) {
    REC_ENTER(drvMemDeviceOpen, (int)NS, dev, unusedFd);
    jl_u64(j_, "dev", dev);
    jl_i64(j_, "unusedFd", unusedFd);
    int r = (int)NS;
    REC_CALL(r, dev, unusedFd);
    rec_out(&c_, r == 0);
    rec_end_drv(&c_, (unsigned)r);
    return r;
}

REC_EXPORT int drvMemDeviceClose(uint32_t dev) {
    REC_ENTER(drvMemDeviceClose, (int)NS, dev);
    jl_u64(j_, "dev", dev);
    int r = (int)NS;
    REC_CALL(r, dev);
    rec_out(&c_, r == 0);
    rec_end_drv(&c_, (unsigned)r);
    return r;
}

REC_EXPORT drvError_t halMemAgentOpen(uint32_t dev, uint32_t agentKind) {
    REC_ENTER(halMemAgentOpen, NS, dev, agentKind);
    jl_u64(j_, "dev", dev);
    jl_u64(j_, "agentKind", agentKind);
    drvError_t r = NS;
    REC_CALL(r, dev, agentKind);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemAgentClose(uint32_t dev, uint32_t agentKind) {
    REC_ENTER(halMemAgentClose, NS, dev, agentKind);
    jl_u64(j_, "dev", dev);
    jl_u64(j_, "agentKind", agentKind);
    drvError_t r = NS;
    REC_CALL(r, dev, agentKind);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT DVresult drvMemSmmuQuery(DVdevice dev, UINT32* ssid) {
    REC_ENTER(drvMemSmmuQuery, NS, dev, ssid);
    jl_u64(j_, "dev", dev);
    jl_ptr(j_, "ssid", ssid);
    DVresult r = NS;
    REC_CALL(r, dev, ssid);
    if (rec_out(&c_, OK(r)))
        dec_scalar(j_, "ssid", ssid, sizeof *ssid, false, false);
    rec_end_drv(&c_, r);
    return r;
}

/* Missing counts as "not supported" (hal.md 3.1). */
REC_EXPORT bool halSupportFeature(uint32_t dev, drvFeature_t feature) {
    REC_ENTER(halSupportFeature, false, dev, feature);
    jl_u64(j_, "dev", dev);
    dec_enum(j_, "feature", (unsigned)feature, REC_NAMES(rec_feature_names));
    bool r = false;
    REC_CALL(r, dev, feature);
    rec_out(&c_, false);
    rec_end_bool(&c_, r);
    return r;
}

REC_EXPORT drvError_t halGetDeviceInfo(uint32_t dev, int32_t moduleType, int32_t infoType,
                                       int64_t* value) {
    REC_ENTER(halGetDeviceInfo, NS, dev, moduleType, infoType, value);
    jl_u64(j_, "dev", dev);
    jl_i64(j_, "moduleType", moduleType);
    jl_i64(j_, "infoType", infoType);
    jl_ptr(j_, "value", value);
    drvError_t r = NS;
    REC_CALL(r, dev, moduleType, infoType, value);
    if (rec_out(&c_, OK(r)))
        dec_scalar(j_, "value", value, sizeof *value, true, false);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halGetSocVersion(uint32_t dev, char* name, uint32_t nameLen) {
    REC_ENTER(halGetSocVersion, NS, dev, name, nameLen);
    jl_u64(j_, "dev", dev);
    jl_ptr(j_, "name", name);
    jl_u64(j_, "nameLen", nameLen);
    drvError_t r = NS;
    REC_CALL(r, dev, name, nameLen);
    if (rec_out(&c_, OK(r)))
        dec_string(j_, "name", name, nameLen);
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halMemCtl(int ctlType, void* in, size_t inSize, void* out, size_t* outSize) {
    REC_ENTER(halMemCtl, NS, ctlType, in, inSize, out, outSize);
    jl_i64(j_, "ctlType", ctlType);
    struct supportFeaturePara para;
    if (ctlType == CTRL_TYPE_SUPPORT_FEATURE && inSize >= sizeof para &&
        rec_read(&para, in, sizeof para)) {
        jl_object(j_, "in");
        jl_hex(j_, "support_feature", para.support_feature);
        jl_u64(j_, "devid", para.devid);
        jl_close(j_);
    } else {
        dec_bytes(j_, "in", in, inSize);
    }
    jl_u64(j_, "inSize", inSize);
    jl_ptr(j_, "out", out);
    dec_scalar(j_, "outSize", outSize, sizeof *outSize, false, false);
    drvError_t r = NS;
    REC_CALL(r, ctlType, in, inSize, out, outSize);
    size_t written = 0;
    if (rec_out(&c_, OK(r)) && rec_read(&written, outSize, sizeof written)) {
        jl_u64(j_, "outSize", written);
        dec_bytes(j_, "out", out, written);
    }
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halDeviceEnableP2P(uint32_t dev, uint32_t peerPhyId, uint32_t flags) {
    REC_ENTER(halDeviceEnableP2P, NS, dev, peerPhyId, flags);
    jl_u64(j_, "dev", dev);
    jl_u64(j_, "peerPhyId", peerPhyId);
    jl_hex(j_, "flags", flags);
    drvError_t r = NS;
    REC_CALL(r, dev, peerPhyId, flags);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halDeviceDisableP2P(uint32_t dev, uint32_t peerPhyId, uint32_t flags) {
    REC_ENTER(halDeviceDisableP2P, NS, dev, peerPhyId, flags);
    jl_u64(j_, "dev", dev);
    jl_u64(j_, "peerPhyId", peerPhyId);
    jl_hex(j_, "flags", flags);
    drvError_t r = NS;
    REC_CALL(r, dev, peerPhyId, flags);
    rec_out(&c_, OK(r));
    rec_end_drv(&c_, r);
    return r;
}

REC_EXPORT drvError_t halDeviceCanAccessPeer(int* canAccess, uint32_t dev, uint32_t peerPhyId) {
    REC_ENTER(halDeviceCanAccessPeer, NS, canAccess, dev, peerPhyId);
    jl_ptr(j_, "canAccess", canAccess);
    jl_u64(j_, "dev", dev);
    jl_u64(j_, "peerPhyId", peerPhyId);
    drvError_t r = NS;
    REC_CALL(r, canAccess, dev, peerPhyId);
    if (rec_out(&c_, OK(r)))
        dec_scalar(j_, "canAccess", canAccess, sizeof *canAccess, true, false);
    rec_end_drv(&c_, r);
    return r;
}

/* Missing: 0, "no message code" (hal.md 3.0). */
REC_EXPORT int32_t halMapErrorCode(drvError_t code) {
    REC_ENTER(halMapErrorCode, 0, code);
    jl_u64(j_, "code", (unsigned)code);
    const char* name = rec_error_name((unsigned)code);
    if (name != NULL)
        jl_str(j_, "code_name", name, 64);
    int32_t r = 0;
    REC_CALL(r, code);
    rec_out(&c_, false);
    rec_end_int(&c_, r);
    return r;
}

/* Missing: -1, what the driver itself returns when its query fails (hal.md 3.10). Written out
 * because the macros need at least one argument. */
REC_EXPORT pid_t drvDeviceGetBareTgid(void) {
    __typeof__(&drvDeviceGetBareTgid) next_ =
        (__typeof__(&drvDeviceGetBareTgid))rec_next(REC_drvDeviceGetBareTgid);
    struct rec c_;
    if (!rec_begin(&c_, REC_drvDeviceGetBareTgid))
        return next_ != NULL ? next_() : -1;
    pid_t r = -1;
    if (rec_call(&c_, (const void*)next_)) {
        r = next_();
        rec_called(&c_);
    }
    rec_out(&c_, false);
    rec_end_int(&c_, r);
    return r;
}

/* Missing: -1, "no NUMA node" (the value the runtime refuses, hal.md 3.9). */
REC_EXPORT int halGetCurrentThreadNumaNode(void) {
    __typeof__(&halGetCurrentThreadNumaNode) next_ =
        (__typeof__(&halGetCurrentThreadNumaNode))rec_next(REC_halGetCurrentThreadNumaNode);
    struct rec c_;
    if (!rec_begin(&c_, REC_halGetCurrentThreadNumaNode))
        return next_ != NULL ? next_() : -1;
    int r = -1;
    if (rec_call(&c_, (const void*)next_)) {
        r = next_();
        rec_called(&c_);
    }
    rec_out(&c_, false);
    rec_end_int(&c_, r);
    return r;
}
