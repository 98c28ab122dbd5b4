"""ts-preserve-other-service: booking a Z/T/K ticket (FudanSELab/train-ticket ts-preserve-other-service
`controller/PreserveOtherController.java`, `service/PreserveOtherServiceImpl.java`; the procedure is
shared with ts-preserve-service, shared/preservecore.py)."""

import preservecore
from ts import ORDER_OTHER, TRAVEL2


def welcome(ctx, request):
    return "Welcome to [ PreserveOther Service ] !"


def preserve(ctx, request):
    ctx.log("info", "[Preserve Other Service][Preserve] Account  order from " + str((request["body"] or {}).get("from")) +
            " -----> " + str((request["body"] or {}).get("to")) + " at " + str((request["body"] or {}).get("date")))
    return preservecore.preserve(ctx, request, TRAVEL2, ORDER_OTHER)
