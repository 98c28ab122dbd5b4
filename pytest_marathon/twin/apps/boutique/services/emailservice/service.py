"""emailservice: order confirmations (Python original), run in dummy mode as upstream ships it.

Upstream: GoogleCloudPlatform/microservices-demo v0.10.6 src/emailservice/email_server.py: the
server starts `DummyEmailService`, whose SendOrderConfirmation logs one line and answers Empty;
it validates nothing and never renders the template (only the unused `EmailService` would).
The template is still loaded at start, as `env.get_template` does at import.
"""

TEMPLATE = resource("confirmation.html")


def SendOrderConfirmation(ctx, request):
    ctx.work(1.5)
    email = request.get("email", "")
    ctx.log("info", f"A request to send order confirmation email to {email} has been received.")
    return {}
