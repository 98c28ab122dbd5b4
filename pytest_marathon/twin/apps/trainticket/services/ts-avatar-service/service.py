"""ts-avatar-service (Python 3, Flask): face cropping of an uploaded avatar (FudanSELab/train-ticket
ts-avatar-service/app.py POST /api/v1/avatar: decodes the base64 image, runs OpenCV's face
detection, answers the cropped face). The twin does no image work: it answers the body it got."""


def avatar(ctx, request):
    body = request["body"] or {}
    return {"msg": "success", "img": body.get("img", "")}
