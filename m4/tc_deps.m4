# tc_deps.m4 -- host libraries besides CUDA.                               -*- Autoconf -*-
#
# Each macro sets tc_have_X=yes|no and tc_why_X (a few words for the configure summary).
#
# TC_CHECK_ZLIB       required (the Matrix Market reader in libtcutil reads .mtx.gz);
#                     substitutes ZLIB_CFLAGS, ZLIB_LIBS.
# TC_CHECK_GRAPHBLAS  optional, --with-graphblas[=DIR]; substitutes GRAPHBLAS_CFLAGS,
#                     GRAPHBLAS_LIBS; AM_CONDITIONAL HAVE_GRAPHBLAS.
# TC_CHECK_CRITERION  optional, --with-criterion; substitutes CRITERION_CFLAGS,
#                     CRITERION_LIBS, TC_TESTS_SKIP_REASON; AM_CONDITIONAL HAVE_CRITERION.

AC_DEFUN([TC_CHECK_ZLIB], [
PKG_CHECK_MODULES([ZLIB], [zlib], [],
  [tc_save_LIBS=$LIBS
   AC_CHECK_HEADER([zlib.h], [],
     [AC_MSG_ERROR([zlib.h not found; install zlib (Debian: apt-get install zlib1g-dev)])])
   AC_CHECK_LIB([z], [gzopen], [ZLIB_LIBS=-lz],
     [AC_MSG_ERROR([libz not found; install zlib (Debian: apt-get install zlib1g-dev)])])
   LIBS=$tc_save_LIBS])
])

AC_DEFUN([TC_CHECK_GRAPHBLAS], [
AC_ARG_WITH([graphblas],
  [AS_HELP_STRING([--with-graphblas@<:@=DIR@:>@],
                  [SuiteSparse:GraphBLAS, for the GrB_mxm adapter (default: use if found)])],
  [], [with_graphblas=check])
tc_have_graphblas=no
AS_CASE([$with_graphblas],
  [no], [tc_why_graphblas="disabled by --without-graphblas"],
  [tc_save_CPPFLAGS=$CPPFLAGS
   tc_save_LDFLAGS=$LDFLAGS
   tc_gb_ldflags=
   AS_CASE([$with_graphblas],
     [yes|check], [],
     [AS_IF([test -d "$with_graphblas"], [],
        [AC_MSG_ERROR([--with-graphblas=$with_graphblas: no such directory])])
      GRAPHBLAS_CFLAGS="-I$with_graphblas/include"
      tc_gb_ldflags="-L$with_graphblas/lib"])
   # Debian installs GraphBLAS.h at the top of /usr/include, other systems in suitesparse/.
   for tc_gb_inc in "$GRAPHBLAS_CFLAGS" "$GRAPHBLAS_CFLAGS -I/usr/include/suitesparse"; do
     CPPFLAGS="$tc_save_CPPFLAGS $tc_gb_inc"
     AS_UNSET([ac_cv_header_GraphBLAS_h])
     AC_CHECK_HEADER([GraphBLAS.h], [GRAPHBLAS_CFLAGS=`echo $tc_gb_inc`; tc_have_graphblas=yes])
     AS_IF([test $tc_have_graphblas = yes], [break])
   done
   AS_IF([test $tc_have_graphblas = yes],
     [LDFLAGS="$LDFLAGS $tc_gb_ldflags"
      AC_CHECK_LIB([graphblas], [GrB_mxm],
        [GRAPHBLAS_LIBS=`echo $tc_gb_ldflags -lgraphblas`],
        [tc_have_graphblas=no; tc_why_graphblas="GraphBLAS.h found but not -lgraphblas"])],
     [tc_why_graphblas="GraphBLAS.h not found"])
   CPPFLAGS=$tc_save_CPPFLAGS
   LDFLAGS=$tc_save_LDFLAGS
   AS_IF([test $tc_have_graphblas = yes],
     [tc_why_graphblas="$GRAPHBLAS_LIBS"
      AC_DEFINE([HAVE_GRAPHBLAS], [1], [Define if SuiteSparse:GraphBLAS is available.])],
     [AS_IF([test "x$with_graphblas" != xcheck],
        [AC_MSG_ERROR([--with-graphblas given but $tc_why_graphblas (Debian: libgraphblas-dev)])])
      GRAPHBLAS_CFLAGS=
      GRAPHBLAS_LIBS=])])
AC_SUBST([GRAPHBLAS_CFLAGS])
AC_SUBST([GRAPHBLAS_LIBS])
AM_CONDITIONAL([HAVE_GRAPHBLAS], [test $tc_have_graphblas = yes])
])

AC_DEFUN([TC_CHECK_CRITERION], [
AC_ARG_WITH([criterion],
  [AS_HELP_STRING([--without-criterion],
                  [do not build the test programs (default: build them if Criterion is found)])],
  [], [with_criterion=check])
tc_have_criterion=no
AS_CASE([$with_criterion],
  [no], [tc_why_criterion="disabled by --without-criterion"],
  [PKG_CHECK_MODULES([CRITERION], [criterion],
     [tc_have_criterion=yes; tc_why_criterion="pkg-config criterion"],
     [tc_save_LIBS=$LIBS
      AC_CHECK_HEADER([criterion/criterion.h],
        [AC_CHECK_LIB([criterion], [criterion_initialize],
           [tc_have_criterion=yes; tc_why_criterion="-lcriterion"
            CRITERION_CFLAGS=; CRITERION_LIBS=-lcriterion],
           [tc_why_criterion="Criterion is missing: criterion/criterion.h found but not -lcriterion"])],
        [tc_why_criterion="Criterion is missing: criterion/criterion.h not found (Debian: libcriterion-dev)"])
      LIBS=$tc_save_LIBS])
   AS_IF([test $tc_have_criterion = no && test "x$with_criterion" = xyes],
     [AC_MSG_ERROR([--with-criterion given but $tc_why_criterion])])])
AS_IF([test $tc_have_criterion = no], [TC_TESTS_SKIP_REASON=$tc_why_criterion])
AC_SUBST([TC_TESTS_SKIP_REASON])
AM_CONDITIONAL([HAVE_CRITERION], [test $tc_have_criterion = yes])
])
