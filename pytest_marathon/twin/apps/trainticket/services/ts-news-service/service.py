"""ts-news-service (Go, hoisie/web): a fixed news list for every path (FudanSELab/train-ticket
ts-news-service/src/main/main.go: `web.Get("/(.*)", hello)` returns the two-item JSON text)."""

NEWS = ('[\n                       {"Title": "News Service Complete", "Content": "Congratulations:Your News Service '
        'Complete"},\n                       {"Title": "Total Ticket System Complete", "Content": "Just a total '
        'test"}\n                    ]')


def hello(ctx, request):
    return NEWS
