-- Every opt-in row the Hub API returns embeds its workspace (id, name, visible fields) and its
-- playbook (id, name, solutions). A hub has few of those and many opt-ins, so the server keeps
-- each hub's workspaces and playbooks as ready JSON and the page query reads opt-ins alone.
-- catalog_version says whether that copy still holds: any statement that changes a hub's
-- workspaces, custom fields or playbooks bumps it in the same transaction, and the page query
-- reads it in the same snapshot as its rows.
ALTER TABLE hubs ADD COLUMN catalog_version bigint NOT NULL DEFAULT 0;

CREATE FUNCTION bump_catalog_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Only the branch taken is planned, so each names the transition tables its trigger has.
  IF TG_OP = 'INSERT' THEN
    UPDATE hubs SET catalog_version = catalog_version + 1 WHERE id IN (SELECT hub_id FROM new_rows);
  ELSIF TG_OP = 'DELETE' THEN
    UPDATE hubs SET catalog_version = catalog_version + 1 WHERE id IN (SELECT hub_id FROM old_rows);
  ELSE -- an update may move a row from one hub to another: both hubs change
    UPDATE hubs SET catalog_version = catalog_version + 1
     WHERE id IN (SELECT hub_id FROM old_rows UNION SELECT hub_id FROM new_rows);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER workspaces_catalog_ins AFTER INSERT ON workspaces REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_catalog_version();
CREATE TRIGGER workspaces_catalog_upd AFTER UPDATE ON workspaces REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_catalog_version();
CREATE TRIGGER workspaces_catalog_del AFTER DELETE ON workspaces REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_catalog_version();
CREATE TRIGGER workspace_fields_catalog_ins AFTER INSERT ON workspace_fields REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_catalog_version();
CREATE TRIGGER workspace_fields_catalog_upd AFTER UPDATE ON workspace_fields REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_catalog_version();
CREATE TRIGGER workspace_fields_catalog_del AFTER DELETE ON workspace_fields REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_catalog_version();
CREATE TRIGGER playbooks_catalog_ins AFTER INSERT ON playbooks REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_catalog_version();
CREATE TRIGGER playbooks_catalog_upd AFTER UPDATE ON playbooks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_catalog_version();
CREATE TRIGGER playbooks_catalog_del AFTER DELETE ON playbooks REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_catalog_version();
