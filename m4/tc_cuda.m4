# tc_cuda.m4 -- locate the CUDA toolkit, nvcc, cudart and cuSPARSE.        -*- Autoconf -*-
#
# TC_CHECK_CUDA
#   --with-cuda=DIR (default /usr/local/cuda).  CUDA is required: every failure stops
#   configure with a message naming the missing piece and the option that fixes it.
#   Substitutes CUDA_HOME, NVCC, NVCC_VERSION, CUDA_CPPFLAGS, CUDA_LDFLAGS, CUDA_LIBS and
#   CUDA_RPATH (libtool's -R DIR, only when the loader would not find cudart otherwise).
#
# TC_CUDA_ARCH
#   --with-cuda-arch=LIST ("90", "90,80", "sm_90 sm_80", "native", "all").  Substitutes
#   NVCC_ARCH_FLAGS and TC_CUDA_ARCH_SUMMARY.  Device code for every listed architecture,
#   plus PTX for the newest one so that later GPUs can JIT it.
#
# TC_CHECK_NVCC_WORKS
#   Compiles a small kernel with the chosen flags, so that an unsupported architecture or a
#   host compiler nvcc refuses shows up at configure time, not in the middle of make.

AC_DEFUN([TC_CHECK_CUDA], [
AC_ARG_WITH([cuda],
  [AS_HELP_STRING([--with-cuda=DIR],
                  [CUDA toolkit prefix (default: /usr/local/cuda)])],
  [], [with_cuda=/usr/local/cuda])
AS_CASE([$with_cuda],
  [no], [AC_MSG_ERROR([tcsparse needs CUDA; --without-cuda is not supported])],
  [yes|""], [with_cuda=/usr/local/cuda])
CUDA_HOME=$with_cuda
AS_IF([test -d "$CUDA_HOME"], [],
  [AC_MSG_ERROR([CUDA toolkit directory '$CUDA_HOME' not found; pass --with-cuda=DIR])])

AC_ARG_VAR([NVCC], [CUDA compiler (default: DIR/bin/nvcc from --with-cuda, else PATH)])
AS_IF([test -z "$NVCC"],
  [AC_PATH_PROG([NVCC], [nvcc], [no], [$CUDA_HOME/bin$PATH_SEPARATOR$PATH])])
AS_IF([test "x$NVCC" = xno],
  [AC_MSG_ERROR([nvcc not found in $CUDA_HOME/bin or PATH; pass --with-cuda=DIR or NVCC=...])])

AC_MSG_CHECKING([nvcc version])
NVCC_VERSION=`$NVCC --version 2>/dev/null | sed -n 's/.*release \([[0-9.]]*\).*/\1/p'`
AS_IF([test -z "$NVCC_VERSION"],
  [AC_MSG_RESULT([unknown])
   AC_MSG_ERROR([$NVCC --version did not report a CUDA release; is it really nvcc?])])
AC_MSG_RESULT([$NVCC_VERSION])

CUDA_CPPFLAGS="-I$CUDA_HOME/include"
AC_MSG_CHECKING([for the CUDA library directory])
CUDA_LIBDIR=
# The toolkit names its per-target folder e.g. targets/x86_64-linux or targets/sbsa-linux.
for tc_dir in "$CUDA_HOME/lib64" "$CUDA_HOME/lib" "$CUDA_HOME"/targets/*-linux/lib; do
  AS_IF([test -z "$CUDA_LIBDIR" && test -d "$tc_dir"], [CUDA_LIBDIR=$tc_dir])
done
AS_IF([test -z "$CUDA_LIBDIR"],
  [AC_MSG_RESULT([no])
   AC_MSG_ERROR([no lib64/ or lib/ under $CUDA_HOME; pass --with-cuda=DIR])])
AC_MSG_RESULT([$CUDA_LIBDIR])
CUDA_LDFLAGS="-L$CUDA_LIBDIR"
CUDA_LIBS="-lcusparse -lcudart"
CUDA_RPATH=

tc_save_CPPFLAGS=$CPPFLAGS
tc_save_LDFLAGS=$LDFLAGS
tc_save_LIBS=$LIBS
CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS -DDISABLE_CUSPARSE_DEPRECATED"
LDFLAGS="$LDFLAGS $CUDA_LDFLAGS"
AC_CHECK_HEADER([cuda_runtime_api.h], [],
  [AC_MSG_ERROR([cuda_runtime_api.h not found in $CUDA_HOME/include; pass --with-cuda=DIR])])
AC_CHECK_HEADER([cusparse.h], [],
  [AC_MSG_ERROR([cusparse.h not found in $CUDA_HOME/include; install the cuSPARSE headers (Debian: libcusparse-dev-*)])])
AC_CHECK_LIB([cudart], [cudaGetDeviceCount], [:],
  [AC_MSG_ERROR([libcudart not found in $CUDA_LIBDIR; pass --with-cuda=DIR])])
AC_CHECK_LIB([cusparse], [cusparseSpMM], [:],
  [AC_MSG_ERROR([libcusparse with the generic API (cusparseSpMM) not found in $CUDA_LIBDIR])],
  [-lcudart])

# The CUDA library directory is often outside the loader's search path (no ld.so.conf
# entry).  Record it as a run path only when a program linked against cudart cannot start.
AC_MSG_CHECKING([whether programs find libcudart at run time])
LIBS="$CUDA_LIBS $LIBS"
AC_RUN_IFELSE([AC_LANG_PROGRAM([[#include <cuda_runtime_api.h>]],
                               [[int n = 0; (void)cudaGetDeviceCount(&n); return 0;]])],
  [AC_MSG_RESULT([yes])],
  [AC_MSG_RESULT([no, linking with -R $CUDA_LIBDIR])
   CUDA_RPATH="-R $CUDA_LIBDIR"],
  [AC_MSG_RESULT([cross-compiling, assuming yes])])
CPPFLAGS=$tc_save_CPPFLAGS
LDFLAGS=$tc_save_LDFLAGS
LIBS=$tc_save_LIBS

AC_SUBST([CUDA_HOME])
AC_SUBST([CUDA_LIBDIR])
AC_SUBST([NVCC_VERSION])
AC_SUBST([CUDA_CPPFLAGS])
AC_SUBST([CUDA_LDFLAGS])
AC_SUBST([CUDA_LIBS])
AC_SUBST([CUDA_RPATH])
])

AC_DEFUN([TC_CUDA_ARCH], [
AC_ARG_WITH([cuda-arch],
  [AS_HELP_STRING([--with-cuda-arch=LIST],
                  [GPU architectures to build, comma or space separated, e.g. "90,80";
                   "native" or "all" are passed to nvcc -arch (default: 80,86,89,90:
                   A100, RTX 30xx/A40, RTX 40xx/L40, H100/H200, plus PTX for sm_90)])],
  [], [with_cuda_arch=80,86,89,90])
AC_MSG_CHECKING([nvcc target architectures])
NVCC_ARCH_FLAGS=
TC_CUDA_ARCH_SUMMARY=
AS_CASE([$with_cuda_arch],
  [yes|no|""], [AC_MSG_ERROR([--with-cuda-arch needs a list, e.g. --with-cuda-arch=90,80])],
  [native|all|all-major],
    [NVCC_ARCH_FLAGS="-arch=$with_cuda_arch"
     TC_CUDA_ARCH_SUMMARY=$with_cuda_arch],
  [tc_newest=0
   for tc_arch in `echo "$with_cuda_arch" | tr ',' ' '`; do
     # Accept 90, sm_90, compute_90, 9.0, and the "a"/"f" feature suffixes (90a, sm_100f).
     tc_arch=`echo "$tc_arch" | sed -e 's/^sm_//' -e 's/^compute_//' -e 's/\.//'`
     AS_CASE([$tc_arch],
       [[[1-9]][[0-9]]|[[1-9]][[0-9]][[af]]|[[1-9]][[0-9]][[0-9]]|[[1-9]][[0-9]][[0-9]][[af]]], [],
       [AC_MSG_ERROR([bad architecture '$tc_arch' in --with-cuda-arch='$with_cuda_arch'])])
     NVCC_ARCH_FLAGS="$NVCC_ARCH_FLAGS -gencode arch=compute_$tc_arch,code=sm_$tc_arch"
     TC_CUDA_ARCH_SUMMARY="$TC_CUDA_ARCH_SUMMARY sm_$tc_arch"
     tc_num=`echo "$tc_arch" | tr -d 'af'`
     AS_IF([test "$tc_num" -gt "$tc_newest"], [tc_newest=$tc_num])
   done
   AS_IF([test -z "$NVCC_ARCH_FLAGS"],
     [AC_MSG_ERROR([--with-cuda-arch='$with_cuda_arch' lists no architecture])])
   # Architecture-specific (a/f) PTX does not run on later GPUs; the plain one does.
   NVCC_ARCH_FLAGS="$NVCC_ARCH_FLAGS -gencode arch=compute_$tc_newest,code=compute_$tc_newest"
   TC_CUDA_ARCH_SUMMARY="$TC_CUDA_ARCH_SUMMARY + PTX compute_$tc_newest"
   TC_CUDA_ARCH_SUMMARY=`echo $TC_CUDA_ARCH_SUMMARY`])
AC_MSG_RESULT([$TC_CUDA_ARCH_SUMMARY])
AC_SUBST([NVCC_ARCH_FLAGS])
AC_SUBST([TC_CUDA_ARCH_SUMMARY])
])

AC_DEFUN([TC_CHECK_NVCC_WORKS], [
AC_MSG_CHECKING([whether $NVCC compiles a kernel for $TC_CUDA_ARCH_SUMMARY])
rm -f conftest.cu conftest.o
cat > conftest.cu <<'_TC_EOF'
__global__ void tc_conftest(float *x) { x@<:@threadIdx.x@:>@ *= 2.0f; }
extern "C" int tc_conftest_launch(float *x) { tc_conftest<<<1, 32>>>(x); return 0; }
_TC_EOF
tc_nvcc_cmd="$NVCC $NVCC_ARCH_FLAGS $TC_NVCC_BASE_FLAGS $NVCCFLAGS -c conftest.cu -o conftest.o"
AS_IF([(eval "$tc_nvcc_cmd") >&AS_MESSAGE_LOG_FD 2>&1 && test -s conftest.o],
  [AC_MSG_RESULT([yes])],
  [AC_MSG_RESULT([no])
   echo "failed command: $tc_nvcc_cmd" >&AS_MESSAGE_LOG_FD
   AC_MSG_FAILURE([$NVCC cannot compile for $TC_CUDA_ARCH_SUMMARY with NVCCFLAGS='$NVCCFLAGS'; see config.log, or choose --with-cuda-arch])])
rm -f conftest.cu conftest.o
])
