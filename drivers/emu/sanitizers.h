// Which sanitizer, if any, this translation unit is built with (GCC and clang spell it
// differently).
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define ACLVMM_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define ACLVMM_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ACLVMM_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define ACLVMM_TSAN 1
#endif
#endif
