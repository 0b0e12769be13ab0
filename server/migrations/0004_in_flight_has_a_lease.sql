-- Never edit a migration once released: add a new file (sqlx checks each file's checksum).
-- No state without a holder or a way out: a row with a turn marked in
-- progress or an approval `executing` always carries a lease (from this
-- release on, a release leaves such a row's lease expired instead of
-- clearing it, and any claim settles it first). An earlier release could
-- leave one without a lease (a decision that claimed a dead replica's
-- expired lease, found the approval executing, answered 409 and cleared
-- the lease), which no sweep looked at: give those rows an expired lease,
-- so the first sweep of any replica records them as interrupted (an
-- executing call "may have run", never re-run).
UPDATE conversations SET lease_token = gen_random_uuid(), lease_until = now()
WHERE lease_token IS NULL
  AND (COALESCE((doc ->> 'turn_in_progress')::boolean, false)
       OR jsonb_path_exists(doc, '$.pending_approvals[*] ? (@.state == "executing")')
       OR COALESCE(doc #>> '{pending_approval,state}' = 'executing', false));
