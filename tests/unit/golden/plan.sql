-- delta-sync plan 0123456789abcdef: 1 to create, 1 to change, 2 unchanged, 2 blocked

-- sales
CREATE SCHEMA IF NOT EXISTS `sales`;

-- shop.orders
ALTER TABLE `shop`.`orders` UNSET TBLPROPERTIES IF EXISTS ('delta_sync.foreign_key.fk_orders_customer');

-- sales.invoices
CREATE TABLE `sales`.`invoices` (
  `id` bigint NOT NULL GENERATED ALWAYS AS IDENTITY (START WITH 1 INCREMENT BY 1),
  `amount` decimal(18,2) NOT NULL COMMENT 'Gross amount',
  `amount_cents` bigint GENERATED ALWAYS AS (CAST(amount * 100 AS BIGINT)),
  `currency` string DEFAULT 'EUR',
  `issued_on` date
) USING DELTA
CLUSTER BY (`issued_on`)
COMMENT 'Invoices'
TBLPROPERTIES ('delta.enableDeletionVectors' = 'true', 'delta.feature.allowColumnDefaults' = 'supported');
ALTER TABLE `sales`.`invoices` ADD CONSTRAINT positive_amount CHECK (amount >= 0);
ALTER TABLE `sales`.`invoices` SET TBLPROPERTIES ('delta_sync.primary_key' = '{"name":"pk_sales_invoices__id","columns":["id"]}');

-- shop.customers: BLOCKED, not applied
-- BLOCKED (rewrite): REPLACE TABLE ... AS SELECT rewrites every data file of the table (1 file, 3.0 MiB) in one commit: concurrent writers conflict and apply retries; streaming readers see an overwrite; restore point: version 12. Fix: allow it with --allow rewrite
-- BLOCKED (data-dependent): will fail: 1 row holds a `id` that does not convert to int (CAST(`id` AS int) gives NULL). Fix: fix those rows first, or give the column a `using:` expression that converts them (e.g. using: TRY_CAST(...) keeps them as NULL)
-- BLOCKED (rewrite): UPDATE rewrites the data files holding rows where `email` is NULL, to give them 'unknown' (concurrent writers may conflict; streaming readers see the rewritten files); 3 rows to update. Fix: allow it with --allow rewrite
-- REPLACE TABLE `shop`.`customers` USING DELTA
-- TBLPROPERTIES ('owner.team' = 'crm', 'delta.constraints.name_not_blank' = 'name <> \'\'')
-- AS SELECT CAST(`id` AS int) AS `id`, `name`
-- FROM `shop`.`customers`;
-- ALTER TABLE `shop`.`customers` ADD COLUMNS (`email` string);
-- UPDATE `shop`.`customers` SET `email` = ('unknown') WHERE `email` IS NULL;
-- ALTER TABLE `shop`.`customers` ADD CONSTRAINT ds_nn_email CHECK (`email` IS NOT NULL);

-- shop.orders
ALTER TABLE `shop`.`orders` ADD CONSTRAINT ds_nn_status CHECK (`status` IS NOT NULL);
ALTER TABLE `shop`.`orders` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name');
ALTER TABLE `shop`.`orders` SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true');
ALTER TABLE `shop`.`orders` SET TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported');
ALTER TABLE `shop`.`orders` UNSET TBLPROPERTIES IF EXISTS ('delta_sync.primary_key');
ALTER TABLE `shop`.`orders` DROP CONSTRAINT known_status;
ALTER TABLE `shop`.`orders` RENAME COLUMN `cust` TO `customer_id`;
ALTER TABLE `shop`.`orders` ALTER COLUMN `qty` TYPE bigint;
ALTER TABLE `shop`.`orders` ALTER COLUMN `placed_at` DROP NOT NULL;
ALTER TABLE `shop`.`orders` ADD COLUMNS (`note` string COMMENT 'Free text');
ALTER TABLE `shop`.`orders` ADD COLUMNS (`address`.`zip` string);
ALTER TABLE `shop`.`orders` ALTER COLUMN `channel` SET DEFAULT 'web';
ALTER TABLE `shop`.`orders` SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true', 'owner.team' = 'billing', 'comment' = 'Customer orders');
ALTER TABLE `shop`.`orders` UNSET TBLPROPERTIES ('owner.ticket');
ALTER TABLE `shop`.`orders` CLUSTER BY (`order_id`);
ALTER TABLE `shop`.`orders` ALTER COLUMN `order_id` COMMENT 'Primary key';
ALTER TABLE `shop`.`orders` ADD CONSTRAINT known_status CHECK (status IN ('new', 'paid', 'shipped'));

-- shop.payments: BLOCKED, not applied
-- BLOCKED (data-dependent): will fail: 2 rows violate `positive_amount`. Fix: fix those rows first (delta-sync sql "UPDATE shop.payments ..."), or change the rule
-- BLOCKED (destructive): dropping `legacy_ref` makes its data unreachable (only time travel keeps it). Fix: allow it with --allow destructive
-- BLOCKED (data-dependent): will fail: 1 key value repeats or is NULL in `pk_shop_payments__id`. Fix: fix those rows first (delta-sync sql "UPDATE shop.payments ..." or "DELETE FROM shop.payments ..."), or change the key
-- BLOCKED (rehearsal): Delta refused `ALTER TABLE `shop`.`payments` ADD CONSTRAINT positive_amount CHECK (amount > 0)`: DELTA_NEW_CHECK_CONSTRAINT_VIOLATION: 2 rows in shop.payments violate the new CHECK constraint (amount > 0) (rehearsed on a shallow clone of the table). Fix: change the spec so that Delta accepts the statement (the rehearsal ran on a clone: the table is unchanged)
-- BLOCKED: new column `method` is NOT NULL, and the table already holds rows that would have no value for it. Fix: give those rows a value with `backfill: <SQL expression>` on the column (e.g. backfill: "'unknown'"), or add it as nullable (nullable: true)
-- ALTER TABLE `shop`.`payments` ADD CONSTRAINT positive_amount CHECK (amount > 0);
-- ALTER TABLE `shop`.`payments` DROP CONSTRAINT legacy_ref_format;
-- ALTER TABLE `shop`.`payments` DROP COLUMNS (`legacy_ref`);
-- COMMENT ON TABLE `shop`.`payments` IS 'Card payments';
-- ALTER TABLE `shop`.`payments` SET TBLPROPERTIES ('delta_sync.primary_key' = '{"name":"pk_shop_payments__id","columns":["id"]}');

-- shop.orders
ALTER TABLE `shop`.`orders` SET TBLPROPERTIES ('delta_sync.foreign_key.fk_orders_customer' = '{"columns":["customer_id"],"references":"shop.customers","parent_columns":["id"]}');
