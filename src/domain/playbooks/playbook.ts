// The vocabulary of playbooks: the questions a playbook asks the workspaces that opt in.

export const QUESTION_TYPES = ['short_answer', 'single_select', 'multi_select'] as const;
export type QuestionType = (typeof QUESTION_TYPES)[number];

/** Playbook question as stored in playbooks.questions. */
export interface Question {
  question: string;
  type: QuestionType;
  required: boolean;
  options?: string[];
}
