-- V10: alerts (issue 37). `alerts_fired` holds one row per alert: its rule, what it is about,
-- the threshold crossed and the period it counts in; the primary key is what makes an alert
-- fire once across replicas (the replica whose insert takes the row sends it).
-- `alert_deliveries` records each sink's outcome.
CREATE TABLE alerts_fired (
    rule TEXT NOT NULL,
    subject TEXT NOT NULL,
    threshold BIGINT NOT NULL,
    period_us BIGINT NOT NULL,
    fired_us BIGINT NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (rule, subject, threshold, period_us)
);
CREATE TABLE alert_deliveries (
    rule TEXT NOT NULL,
    subject TEXT NOT NULL,
    threshold BIGINT NOT NULL,
    period_us BIGINT NOT NULL,
    sink TEXT NOT NULL,
    attempts BIGINT NOT NULL,
    delivered_us BIGINT,
    last_error TEXT
);
