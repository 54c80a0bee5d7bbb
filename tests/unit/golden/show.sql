-- delta-sync plan 0123456789abcdef: 1 to create, 0 to change, 0 unchanged, 1 blocked

-- s.items
CREATE TABLE `s`.`items` (
  `id` bigint
) USING DELTA;

-- s.orders: BLOCKED, not applied
-- BLOCKED (data-dependent): will fail: 2 rows violate `positive`. Fix: fix those rows first (delta-sync sql "UPDATE s.orders ..."), or change the rule
-- BLOCKED (irreversible): dropping `note` needs column mapping: `delta.columnMapping.mode` adds the columnMapping table feature: only DROP FEATURE removes it again (rewrites every data file with the columns' logical names). Fix: allow it with --allow irreversible
-- BLOCKED (destructive): dropping `note` makes its data unreachable (only time travel keeps it). Fix: allow it with --allow destructive
-- ALTER TABLE `s`.`orders` ADD CONSTRAINT positive CHECK (amount > 0);
-- ALTER TABLE `s`.`orders` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name');
-- ALTER TABLE `s`.`orders` DROP COLUMNS (`note`);
-- ALTER TABLE `s`.`orders` ADD COLUMNS (`region` string);
-- ALTER TABLE `s`.`orders` SET TBLPROPERTIES ('team' = 'sales');
