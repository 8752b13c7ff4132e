// How an opt-in's budget is meant: for the whole run of the playbook, or per day.

export const BUDGET_TYPES = ['lifetime', 'daily'] as const;
export type BudgetType = (typeof BUDGET_TYPES)[number];
