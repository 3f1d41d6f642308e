#include <stdlib.h>
#include "plan.h"

void tc_plan_invalidate(struct tcsparseSpMatDescr *d)
{
    if (d->plan == NULL)
        return;
    free(d->plan);
    d->plan = NULL;
}
