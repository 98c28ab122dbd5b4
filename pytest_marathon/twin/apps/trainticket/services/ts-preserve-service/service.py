"""ts-preserve-service: booking a G/D ticket (FudanSELab/train-ticket ts-preserve-service
`controller/PreserveController.java`, `service/PreserveServiceImpl.java`; the procedure is
shared with ts-preserve-other-service, shared/preservecore.py)."""

import preservecore
from ts import ORDER, TRAVEL


def welcome(ctx, request):
    return "Welcome to [ Preserve Service ] !"


def preserve(ctx, request):
    ctx.log("info", "[Preserve Service][Preserve] Account  order from " + str((request["body"] or {}).get("from")) +
            " -----> " + str((request["body"] or {}).get("to")) + " at " + str((request["body"] or {}).get("date")))
    return preservecore.preserve(ctx, request, TRAVEL, ORDER)
