/* Criterion puts the parameterized-test macros here; the shim defines them in criterion.h. */
#include "criterion.h"
