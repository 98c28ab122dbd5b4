-- ts-voucher-service's initDatabase (FudanSELab/train-ticket ts-voucher-service/server.py): the
-- schema and table it creates at start-up, run here as the server's init script.
CREATE SCHEMA IF NOT EXISTS voucherservice;
USE voucherservice;
CREATE TABLE IF NOT EXISTS `voucher` (
  voucher_id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  order_id VARCHAR(1024) NOT NULL,
  travelDate VARCHAR(1024) NOT NULL,
  travelTime VARCHAR(1024) NOT NULL,
  contactName VARCHAR(1024) NOT NULL,
  trainNumber VARCHAR(1024) NOT NULL,
  seatClass INT NOT NULL,
  seatNumber VARCHAR(1024) NOT NULL,
  startStation VARCHAR(1024) NOT NULL,
  destStation VARCHAR(1024) NOT NULL,
  price FLOAT NOT NULL);
