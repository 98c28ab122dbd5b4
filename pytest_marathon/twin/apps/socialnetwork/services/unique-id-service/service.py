"""UniqueIdService (DeathStarBench socialNetwork/src/UniqueIdService/UniqueIdHandler.h): a 64-bit id
from the milliseconds since a fixed epoch, the pod's counter and its machine id (here a number from
the request id in place of the MAC-derived machine id)."""

COUNTER = [0]
EPOCH_MS = 1514764800000  # the handler's CUSTOM_EPOCH (2018-01-01)


def ComposeUniqueId(ctx, request):
    COUNTER[0] = (COUNTER[0] + 1) % 4096
    machine = sum(ord(c) for c in str(ctx.request_id)) % 1024
    return {"post_id": ((EPOCH_MS + int(ctx.now * 1000)) << 22) + (machine << 12) + COUNTER[0]}
