-- A grant's context (the user, hub and workspace its tokens act in) is written once, when the
-- user consents. Rewriting it would widen or move tokens already issued from the grant, so the
-- database refuses it; a new consent makes a new grant instead.
CREATE FUNCTION oauth_grant_contexts_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the context of OAuth grant % cannot change; a new consent makes a new grant', OLD.grant_id
    USING ERRCODE = 'integrity_constraint_violation';
END
$$;
CREATE TRIGGER oauth_grant_contexts_immutable BEFORE UPDATE ON oauth_grant_contexts
  FOR EACH ROW EXECUTE FUNCTION oauth_grant_contexts_immutable();
