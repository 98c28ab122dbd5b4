"""ts-notification-service: e-mail notices (FudanSELab/train-ticket ts-notification-service
`service/NotificationServiceImpl.java`: preserveSuccess etc. send through JavaMailSender to
smtp.163.com and return true). The twin sends no mail: each notice answers true at once."""


def welcome(ctx, request):
    return "Welcome to [ Notification Service ] !"


def notify(ctx, request):
    return True
