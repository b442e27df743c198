-- Broker-wide settings (maintenance modes), shared by every broker on the
-- database and kept across restarts.
CREATE TABLE settings (
    key        text   PRIMARY KEY,
    value      text   NOT NULL,
    updated_at bigint NOT NULL
);
