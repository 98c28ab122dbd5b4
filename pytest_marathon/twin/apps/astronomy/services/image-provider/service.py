"""image-provider: nginx serving the product images from /static.

Upstream: open-telemetry/opentelemetry-demo 2.2.0 src/image-provider/nginx.conf.template (root
/static, gzip_static, /status stub_status) and src/image-provider/static/products/. A missing
file is nginx's 404 page.
"""

PICTURES = ("EclipsmartTravelRefractorTelescope.jpg", "LensCleaningKit.jpg", "NationalParkFoundationExplorascope.jpg",
            "OpticalTubeAssembly.jpg", "RedFlashlight.jpg", "RoofBinoculars.jpg", "SolarFilter.jpg",
            "SolarSystemColorImager.jpg", "StarsenseExplorer.jpg", "TheCometBook.jpg")
NOT_FOUND = ("<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not Found</h1>"
             "</center>\r\n<hr><center>nginx/1.29.0</center>\r\n</body>\r\n</html>\r\n")


def static(ctx, request):
    path = request.get("path", "/")
    if path == "/status":
        return {"status": 200, "body": "Active connections: 1 \nserver accepts handled requests\n 1 1 1 \n"
                                       "Reading: 0 Writing: 1 Waiting: 0 \n"}
    if path.startswith("/products/") and path[len("/products/"):] in PICTURES:
        return {"status": 200, "body": ""}
    return {"status": 404, "body": NOT_FOUND}
