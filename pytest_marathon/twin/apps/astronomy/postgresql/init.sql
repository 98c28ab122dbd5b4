-- The twin's translation of upstream opentelemetry-demo 2.2.0 src/postgresql/init.sql (identical to
-- the chart's postgresql/init.sql), run by twin/sqlstore.py on an empty server at every container
-- start (the chart mounts it from ConfigMap postgresql-init at /docker-entrypoint-initdb.d and gives
-- postgresql no volume). CREATE USER, CREATE SCHEMA and GRANT are interpreted by the twin (users and
-- privileges kept in Python); every other statement runs on SQLite, so types and constraints are
-- written the way SQLite accepts them. Each schema is its own attached database: a foreign key
-- names its table without the schema (SQLite resolves it in the same database).
-- Differences from upstream: the reviews schema (product-reviews is not deployed) and the
-- product descriptions are left out (upstream prose is not copied); ids, names, pictures,
-- prices and categories are upstream's (init.sql:126-156).

CREATE USER otelu WITH PASSWORD 'otelp';

CREATE SCHEMA accounting;
GRANT USAGE ON SCHEMA accounting TO otelu;

CREATE TABLE accounting."order" (
    order_id TEXT PRIMARY KEY
);

CREATE TABLE accounting.shipping (
    shipping_tracking_id TEXT PRIMARY KEY,
    shipping_cost_currency_code TEXT NOT NULL,
    shipping_cost_units BIGINT NOT NULL,
    shipping_cost_nanos INT NOT NULL,
    street_address TEXT,
    city TEXT,
    state TEXT,
    country TEXT,
    zip_code TEXT,
    order_id TEXT NOT NULL,
    FOREIGN KEY (order_id) REFERENCES "order"(order_id) ON DELETE CASCADE
);

CREATE TABLE accounting.orderitem (
    item_cost_currency_code TEXT NOT NULL,
    item_cost_units BIGINT NOT NULL,
    item_cost_nanos INT NOT NULL,
    product_id TEXT NOT NULL,
    quantity INT NOT NULL,
    order_id TEXT NOT NULL,
    PRIMARY KEY (order_id, product_id),
    FOREIGN KEY (order_id) REFERENCES "order"(order_id) ON DELETE CASCADE
);

GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA accounting TO otelu;

CREATE SCHEMA catalog;
GRANT USAGE ON SCHEMA catalog TO otelu;

CREATE TABLE catalog.products (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    description TEXT,
    picture TEXT,
    price_currency_code TEXT NOT NULL,
    price_units BIGINT NOT NULL,
    price_nanos INT NOT NULL,
    categories TEXT
);

GRANT SELECT ON ALL TABLES IN SCHEMA catalog TO otelu;

INSERT INTO catalog.products (id, name, description, picture, price_currency_code, price_units, price_nanos, categories)
VALUES
    ('OLJCESPC7Z', 'National Park Foundation Explorascope', NULL, 'NationalParkFoundationExplorascope.jpg', 'USD', 101, 960000000, 'telescopes'),
    ('66VCHSJNUP', 'Starsense Explorer Refractor Telescope', NULL, 'StarsenseExplorer.jpg', 'USD', 349, 950000000, 'telescopes'),
    ('1YMWWN1N4O', 'Eclipsmart Travel Refractor Telescope', NULL, 'EclipsmartTravelRefractorTelescope.jpg', 'USD', 129, 950000000, 'telescopes,travel'),
    ('L9ECAV7KIM', 'Lens Cleaning Kit', NULL, 'LensCleaningKit.jpg', 'USD', 21, 950000000, 'accessories'),
    ('2ZYFJ3GM2N', 'Roof Binoculars', NULL, 'RoofBinoculars.jpg', 'USD', 209, 950000000, 'binoculars'),
    ('0PUK6V6EV0', 'Solar System Color Imager', NULL, 'SolarSystemColorImager.jpg', 'USD', 175, 0, 'accessories,telescopes'),
    ('LS4PSXUNUM', 'Red Flashlight', NULL, 'RedFlashlight.jpg', 'USD', 57, 80000000, 'accessories,flashlights'),
    ('9SIQT8TOJO', 'Optical Tube Assembly', NULL, 'OpticalTubeAssembly.jpg', 'USD', 3599, 0, 'accessories,telescopes,assembly'),
    ('6E92ZMYYFZ', 'Solar Filter', NULL, 'SolarFilter.jpg', 'USD', 69, 950000000, 'accessories,telescopes'),
    ('HQTGWGPNH4', 'The Comet Book', NULL, 'TheCometBook.jpg', 'USD', 0, 990000000, 'books');
