// Kernel loading and launch (runtime-extra.md §9): binaries, kernels by name, parameter buffers,
// aclrtLaunchKernelWithConfig. The work is in runtime/kernels.cpp; a kernel itself is a CPU
// function of the process's registry (runtime/kernel_registry.h, aclvmmRegisterKernel).
#include <string>

#include "api/api_common.h"
#include "api/api_forward.h"
#include "runtime/runtime.h"

using namespace aclvmm;

namespace {

// runtime-extra.md §9.1 checks 2 and 3: the options' shape and values (none has an effect).
Status check_load_options(const aclrtBinaryLoadOptions* options) {
  if (options == nullptr) return Status::Ok();
  if (options->options == nullptr) {
    return Error(ACL_ERROR_RT_PARAM_INVALID, "options->options must not be NULL");
  }
  for (size_t i = 0; i < options->numOpt; ++i) {
    const aclrtBinaryLoadOption& o = options->options[i];
    const std::string which = "option " + std::to_string(i);
    switch (api::raw(o.type)) {
      case ACL_RT_BINARY_LOAD_OPT_LAZY_LOAD:
        if (o.value.isLazyLoad > 1) {
          return Error(ACL_ERROR_RT_PARAM_INVALID, which + ": isLazyLoad must be 0 or 1");
        }
        break;
      case ACL_RT_BINARY_LOAD_OPT_MAGIC:
        return Error(ACL_ERROR_RT_PARAM_INVALID,
                     which + ": the magic option is only for binaries loaded from memory");
      case ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE:
        if (o.value.cpuKernelMode != 0 && o.value.cpuKernelMode != 1) {
          return Error(ACL_ERROR_RT_PARAM_INVALID, which + ": cpuKernelMode must be 0 or 1");
        }
        break;
      default:
        return Error(ACL_ERROR_RT_PARAM_INVALID,
                     which + ": unknown option type " + std::to_string(api::raw(o.type)));
    }
  }
  return Status::Ok();
}

// runtime-extra.md §9.6 check 4: the launch attributes are checked and otherwise ignored (no
// scheduling mode, buffer size, engine or timeout is emulated).
Status check_launch_config(const aclrtLaunchKernelCfg* cfg) {
  if (cfg == nullptr) return Status::Ok();
  if (cfg->attrs == nullptr) return Error(ACL_ERROR_RT_PARAM_INVALID, "cfg->attrs must not be NULL");
  bool timeout = false, timeout_us = false;
  for (size_t i = 0; i < cfg->numAttrs; ++i) {
    const aclrtLaunchKernelAttr& a = cfg->attrs[i];
    const std::string which = "attribute " + std::to_string(i);
    switch (api::raw(a.id)) {
      case ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE:
        if (a.value.schemMode >= 2) {
          return Error(ACL_ERROR_RT_PARAM_INVALID, which + ": schemMode must be 0 or 1");
        }
        break;
      case ACL_RT_LAUNCH_KERNEL_ATTR_DYN_UBUF_SIZE:
      case ACL_RT_LAUNCH_KERNEL_ATTR_ENGINE_TYPE:
      case ACL_RT_LAUNCH_KERNEL_ATTR_BLOCKDIM_OFFSET:
        break;
      case ACL_RT_LAUNCH_KERNEL_ATTR_BLOCK_TASK_PREFETCH:
        if (a.value.isBlockTaskPrefetch > 1) {
          return Error(ACL_ERROR_RT_PARAM_INVALID, which + ": isBlockTaskPrefetch must be 0 or 1");
        }
        break;
      case ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP:
        if (a.value.isDataDump > 1) {
          return Error(ACL_ERROR_RT_PARAM_INVALID, which + ": isDataDump must be 0 or 1");
        }
        break;
      case ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT:
        timeout = true;
        break;
      case ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US:
        timeout_us = true;
        break;
      case ACL_RT_LAUNCH_KERNEL_ATTR_ENABLE_PROFILING:
        if (a.value.enableProfiling > 1) {
          return Error(ACL_ERROR_RT_PARAM_INVALID, which + ": enableProfiling must be 0 or 1");
        }
        break;
      default:
        return Error(ACL_ERROR_RT_PARAM_INVALID,
                     which + ": unknown attribute id " + std::to_string(api::raw(a.id)));
    }
  }
  if (timeout && timeout_us) {
    return Error(ACL_ERROR_RT_PARAM_INVALID, "TIMEOUT and TIMEOUT_US cannot both be given");
  }
  return Status::Ok();
}

}  // namespace

extern "C" {

aclError aclrtBinaryLoadFromFile(const char* binPath, aclrtBinaryLoadOptions* options,
                                 aclrtBinHandle* binHandle) {
  ACLVMM_API_ENTER("aclrtBinaryLoadFromFile");
  ACLVMM_FORWARD(aclrtBinaryLoadFromFile, binPath, options, binHandle);
  ACLVMM_REQUIRE_NOT_NULL(api, binPath);
  ACLVMM_REQUIRE_NOT_NULL(api, binHandle);
  if (Status st = check_load_options(options); !st.ok()) return api::finish(api, st);
  auto binary = Runtime::get().kernels().load(binPath);
  if (!binary.ok()) return api::finish(api, binary.status());
  *binHandle = api::from_token(*binary);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtBinaryGetFunction(const aclrtBinHandle binHandle, const char* kernelName,
                                aclrtFuncHandle* funcHandle) {
  ACLVMM_API_ENTER("aclrtBinaryGetFunction");
  ACLVMM_FORWARD(aclrtBinaryGetFunction, binHandle, kernelName, funcHandle);
  ACLVMM_REQUIRE_NOT_NULL(api, binHandle);
  ACLVMM_REQUIRE_NOT_NULL(api, kernelName);
  ACLVMM_REQUIRE_NOT_NULL(api, funcHandle);
  auto function = Runtime::get().kernels().function(api::token(binHandle), kernelName);
  if (!function.ok()) return api::finish(api, function.status());
  *funcHandle = api::from_token(*function);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtBinaryUnLoad(aclrtBinHandle binHandle) {
  ACLVMM_API_ENTER("aclrtBinaryUnLoad");
  ACLVMM_FORWARD(aclrtBinaryUnLoad, binHandle);
  ACLVMM_REQUIRE_NOT_NULL(api, binHandle);
  return api::finish(api, Runtime::get().kernels().unload(api::token(binHandle)));
  ACLVMM_API_EXIT();
}

aclError aclrtKernelArgsInit(aclrtFuncHandle funcHandle, aclrtArgsHandle* argsHandle) {
  ACLVMM_API_ENTER("aclrtKernelArgsInit");
  ACLVMM_FORWARD(aclrtKernelArgsInit, funcHandle, argsHandle);
  ACLVMM_REQUIRE_NOT_NULL(api, funcHandle);
  ACLVMM_REQUIRE_NOT_NULL(api, argsHandle);
  auto args = Runtime::get().kernels().args_init(api::token(funcHandle));
  if (!args.ok()) return api::finish(api, args.status());
  *argsHandle = api::from_token(*args);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtKernelArgsAppend(aclrtArgsHandle argsHandle, void* param, size_t paramSize,
                               aclrtParamHandle* paramHandle) {
  ACLVMM_API_ENTER("aclrtKernelArgsAppend");
  ACLVMM_FORWARD(aclrtKernelArgsAppend, argsHandle, param, paramSize, paramHandle);
  ACLVMM_REQUIRE_NOT_NULL(api, argsHandle);
  ACLVMM_REQUIRE_NOT_NULL(api, param);
  if (paramSize == 0) return api::invalid(api, "paramSize must not be 0");
  ACLVMM_REQUIRE_NOT_NULL(api, paramHandle);
  auto handle = Runtime::get().kernels().args_append(api::token(argsHandle), param, paramSize);
  if (!handle.ok()) return api::finish(api, handle.status());
  *paramHandle = api::from_token(*handle);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtKernelArgsFinalize(aclrtArgsHandle argsHandle) {
  ACLVMM_API_ENTER("aclrtKernelArgsFinalize");
  ACLVMM_FORWARD(aclrtKernelArgsFinalize, argsHandle);
  ACLVMM_REQUIRE_NOT_NULL(api, argsHandle);
  return api::finish(api, Runtime::get().kernels().args_finalize(api::token(argsHandle)));
  ACLVMM_API_EXIT();
}

aclError aclrtLaunchKernelWithConfig(aclrtFuncHandle funcHandle, uint32_t numBlocks,
                                     aclrtStream stream, aclrtLaunchKernelCfg* cfg,
                                     aclrtArgsHandle argsHandle, void* reserve) {
  ACLVMM_API_ENTER("aclrtLaunchKernelWithConfig");
  ACLVMM_FORWARD(aclrtLaunchKernelWithConfig, funcHandle, numBlocks, stream, cfg, argsHandle,
                 reserve);
  ACLVMM_REQUIRE_NOT_NULL(api, funcHandle);
  if (numBlocks == 0) return api::invalid(api, "numBlocks must not be 0");
  ACLVMM_REQUIRE_NOT_NULL(api, argsHandle);
  if (reserve != nullptr) return api::invalid(api, "reserve must be NULL");
  KernelLaunch launch;
  launch.function = api::token(funcHandle);
  launch.blocks = numBlocks;
  launch.stream = api::token(stream);
  launch.args = api::token(argsHandle);
  launch.config_verdict = check_launch_config(cfg);
  return api::finish(api, Runtime::get().kernels().launch(launch));
  ACLVMM_API_EXIT();
}

}  // extern "C"
