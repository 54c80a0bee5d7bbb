ALTER TABLE `shop`.`orders` DROP CONSTRAINT IF EXISTS fk_shop_orders__customer_id__shop_customers RESTRICT;
ALTER TABLE `shop`.`orders` UNSET TBLPROPERTIES IF EXISTS ('delta_sync.foreign_key.fk_shop_orders__customer_id__shop_customers');
ALTER TABLE `shop`.`customers` DROP CONSTRAINT IF EXISTS pk_shop_customers__id RESTRICT;
ALTER TABLE `shop`.`customers` UNSET TBLPROPERTIES IF EXISTS ('delta_sync.primary_key');
ALTER TABLE `shop`.`customers` ADD CONSTRAINT pk_shop_customers__id_region PRIMARY KEY (`id`, `region`);
ALTER TABLE `shop`.`customers` SET TBLPROPERTIES ('delta_sync.primary_key' = '{"name":"pk_shop_customers__id_region","columns":["id","region"]}');
CREATE TABLE `shop`.`lines` (
  `order_id` bigint NOT NULL,
  `n` int NOT NULL
) USING DELTA;
ALTER TABLE `shop`.`lines` ADD CONSTRAINT pk_shop_lines__order_id_n PRIMARY KEY (`order_id`, `n`);
ALTER TABLE `shop`.`lines` SET TBLPROPERTIES ('delta_sync.primary_key' = '{"name":"pk_shop_lines__order_id_n","columns":["order_id","n"]}');
ALTER TABLE `shop`.`lines` ADD CONSTRAINT fk_shop_lines__order_id__shop_orders FOREIGN KEY (`order_id`) REFERENCES `shop`.`orders` (`id`);
ALTER TABLE `shop`.`lines` SET TBLPROPERTIES ('delta_sync.foreign_key.fk_shop_lines__order_id__shop_orders' = '{"columns":["order_id"],"references":"shop.orders","parent_columns":["id"]}');
