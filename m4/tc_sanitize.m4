# tc_sanitize.m4 -- AddressSanitizer + UndefinedBehaviorSanitizer build.   -*- Autoconf -*-
#
# TC_ENABLE_SANITIZERS
#   --enable-sanitizers appends TC_SANITIZE_FLAGS to TC_CFLAGS.  TC_CFLAGS is AM_CFLAGS,
#   which automake puts on every C compile and on every libtool link line, so the C objects,
#   the libraries, the tools and the tests are all instrumented and linked with the
#   runtimes.  nvcc does not see AM_CFLAGS: the .cu host code (kernel launch glue, which
#   cannot run without a GPU) and the device code stay uninstrumented; device memory is
#   compute-sanitizer's job.  ASan still tracks heap blocks that such code allocates,
#   because it intercepts malloc and free for the whole process.
#   Sets tc_sanitize_note for the configure summary.

AC_DEFUN([TC_ENABLE_SANITIZERS], [
AC_ARG_ENABLE([sanitizers],
  [AS_HELP_STRING([--enable-sanitizers],
                  [instrument the host C code with AddressSanitizer and
                   UndefinedBehaviorSanitizer (not the CUDA code); see
                   build-aux/sanitize-check for the runtime options the tests need])],
  [], [enable_sanitizers=no])
TC_SANITIZE_FLAGS=
tc_sanitize_note=no
AS_CASE([$enable_sanitizers],
  [no], [],
  [yes],
    [TC_SANITIZE_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
     # A missing runtime (libasan, libubsan) only shows at link time: check now, not
     # half-way through make.
     AC_MSG_CHECKING([whether $CC links with $TC_SANITIZE_FLAGS])
     tc_save_CFLAGS=$CFLAGS
     CFLAGS="$CFLAGS $TC_SANITIZE_FLAGS"
     AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <stdlib.h>]],
                                     [[char *p = malloc(4); free(p); return p == 0;]])],
       [AC_MSG_RESULT([yes])],
       [AC_MSG_RESULT([no])
        AC_MSG_FAILURE([--enable-sanitizers: $CC cannot build with $TC_SANITIZE_FLAGS (Debian: the ASan/UBSan runtimes come with gcc's libgcc-*-dev; see config.log)])])
     CFLAGS=$tc_save_CFLAGS
     TC_CFLAGS="$TC_CFLAGS $TC_SANITIZE_FLAGS"
     tc_sanitize_note="ASan + UBSan in the host C code (not in the CUDA code)"],
  [AC_MSG_ERROR([--enable-sanitizers takes no value (got '$enable_sanitizers')])])
AC_SUBST([TC_SANITIZE_FLAGS])
])
