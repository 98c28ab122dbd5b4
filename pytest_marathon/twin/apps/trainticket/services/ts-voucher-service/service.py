"""ts-voucher-service (Python 3, Tornado, PyMySQL): a travel voucher per order in MySQL
(FudanSELab/train-ticket ts-voucher-service/server.py GetVoucherHandler: the voucher of the
order in ts-voucher-mysql's voucherservice.voucher, else the order from ts-order-service (type 1)
or ts-order-other-service (type 0) over urllib, inserted and read back). Tornado answers an
uncaught exception with 500 and logs it (docs/fidelity.md: the MySQL client's texts are
go-sql-driver's, not PyMySQL's)."""

import json

DSN = "jdbc:mysql://ts-voucher-mysql:3306/voucherservice?user=root&password=root"
COLUMNS = ("voucher_id", "order_id", "travelDate", "travelTime", "contactName", "trainNumber", "seatClass",
           "seatNumber", "startStation", "destStation", "price")


def fetch(ctx, order_id):
    rows = ctx.sql(DSN).query("SELECT * FROM voucher where order_id = ?", order_id)
    if not rows:
        return None
    row = rows[0]
    return json.dumps({"voucher_id": row[0], "order_id": row[1], "travelDate": row[2], "contactName": row[4],
                       "train_number": row[5], "seat_number": row[7], "start_station": row[8],
                       "dest_station": row[9], "price": row[10]})


def get_voucher(ctx, request):
    info = request["body"] or {}
    order_id = str(info.get("orderId"))
    found = fetch(ctx, order_id)
    if found is not None:
        return found
    base = ("http://ts-order-other-service:12032/api/v1/orderOtherService/orderOther/" if int(info.get("type", 0)) == 0
            else "http://ts-order-service:12031/api/v1/orderservice/order/")
    order = (ctx.http("GET", base + order_id)["body"] or {}).get("data") or {}
    ctx.sql(DSN).execute(
        "INSERT INTO voucher (order_id,travelDate,travelTime,contactName,trainNumber,seatClass,seatNumber,"
        "startStation,destStation,price)VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        order["id"], order["travelDate"], order["travelTime"], order["contactsName"], order["trainNumber"],
        order["seatClass"], order["seatNumber"], order["from"], order["to"], order["price"])
    return fetch(ctx, order_id)
