import { type Kysely, sql } from "kysely";

/**
 * Payments (docs/billing.md): the payment provider's customer per account,
 * the subscription that sets the plan, the purchases, and ledger grants keyed
 * on the provider's ids. The unique index on (stripe_ref, reason) is what
 * makes a repeated or concurrent delivery of one event grant once: the second
 * grant of the same reason for the same Stripe object cannot be written.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table credit_ledger drop constraint credit_ledger_reason_check;
    alter table credit_ledger add constraint credit_ledger_reason_check check (reason in (
      'signup_grant', 'admin_grant', 'job_debit', 'job_refund',
      'pack_purchase', 'plan_allowance', 'plan_allowance_expiry', 'refund_clawback', 'dispute_clawback'
    ));
    alter table credit_ledger add column stripe_ref text;
    create unique index credit_ledger_stripe_ref_idx on credit_ledger (stripe_ref, reason) where stripe_ref is not null;

    -- The current plan allowance (docs/billing.md): its credits, and the ledger row after which jobs spend it.
    alter table profiles add column allowance_credits integer not null default 0 check (allowance_credits >= 0);
    alter table profiles add column allowance_since_ledger_id bigint not null default 0;

    create table billing_customers (
      user_id text primary key references "user" ("id") on delete cascade,
      stripe_customer_id text not null unique,
      created_at timestamptz not null default now()
    );

    create table billing_subscriptions (
      stripe_subscription_id text primary key,
      user_id text not null references "user" ("id") on delete cascade,
      plan text not null check (plan in ('starter', 'core', 'pro')),
      status text not null,
      current_period_end timestamptz,
      cancel_at_period_end boolean not null default false,
      -- The Stripe event (its created time, seconds) the row was last written from: an older one arriving late is ignored.
      event_created bigint not null default 0,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create index billing_subscriptions_user_idx on billing_subscriptions (user_id, updated_at desc);

    create table billing_purchases (
      id bigint generated always as identity primary key,
      user_id text not null references "user" ("id") on delete cascade,
      kind text not null check (kind in ('pack', 'plan')),
      plan text,
      credits integer not null check (credits >= 0),
      amount integer,
      currency text,
      -- The checkout session of a pack, the invoice of a plan's period.
      stripe_ref text not null unique,
      stripe_payment_intent text unique,
      credits_clawed_back integer not null default 0 check (credits_clawed_back >= 0),
      amount_refunded integer not null default 0,
      disputed boolean not null default false,
      -- A plan period's end: its allowance can be taken back (refund, dispute) only while it lasts.
      period_end timestamptz,
      created_at timestamptz not null default now()
    );
    create index billing_purchases_user_idx on billing_purchases (user_id, id desc);
  `.execute(db);
}
