/*
 * libacl_rt.so of the wheel: no code of its own, only DT_NEEDED libascendcl.so.
 *
 * In an installed root libacl_rt.so is a symlink to libascendcl.so, so both names load one file
 * and one runtime. A wheel cannot hold a symlink, and a copy would be a second file: a process
 * that loaded both names would run two runtimes. This library instead brings libascendcl.so in
 * as its dependency: a program built against the vendor's libacl_rt.so resolves every aclrt*
 * symbol in libascendcl.so (the dynamic linker searches the dependencies too), and
 * dlsym(dlopen("libacl_rt.so"), ...) finds them the same way.
 */
typedef int aclvmm_acl_rt_shim_is_empty;
