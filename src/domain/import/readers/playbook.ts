// Reads a `playbook` line: a hub's campaign template, with its solutions, variants and questions.

import { SOLUTIONS, type Solution } from '../../opt-ins/opt-in.ts';
import { QUESTION_TYPES, type Question } from '../../playbooks/playbook.ts';
import { isObject, setEntry, shown, type FieldReader } from '../field-reader.ts';
import type { PlaybookRecord } from '../records.ts';

const QUESTION_FIELDS = new Set(['question', 'type', 'required', 'options']);

function stringList(r: FieldReader, field: string, value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0 || !value.every((v) => typeof v === 'string' && v.trim() !== '' && v.length <= 200)) {
    r.fail(field, `must be a non-empty array of non-blank strings, got ${shown(value)}`);
    return [];
  }
  return value as string[];
}

function readSolutions(r: FieldReader): Solution[] {
  const raw = r.raw('solutions');
  const valid =
    Array.isArray(raw) &&
    raw.length > 0 &&
    raw.every((s) => (SOLUTIONS as readonly unknown[]).includes(s)) &&
    new Set(raw).size === raw.length;
  if (valid) return raw as Solution[];
  r.fail('solutions', `must be a non-empty array of distinct values from ${SOLUTIONS.join(', ')}; got ${shown(raw)}`);
  return [];
}

function readVariants(r: FieldReader): Record<string, string[]> {
  const raw = r.raw('variants');
  const variants: Record<string, string[]> = {};
  if (raw !== undefined && !isObject(raw)) {
    r.fail('variants', `must be an object of option lists, like {"audience":["Families","Students"]}; got ${shown(raw)}`);
  } else if (raw) {
    for (const [dimension, options] of Object.entries(raw)) setEntry(variants, dimension, stringList(r, `variants.${dimension}`, options));
  }
  return variants;
}

/** One question; issues go to `questions[i].…`. */
function readQuestion(r: FieldReader, at: string, q: Record<string, unknown>): Question {
  for (const key of Object.keys(q)) if (!QUESTION_FIELDS.has(key)) r.fail(`${at}.${key}`, 'is not a field of a question');
  if (typeof q.question !== 'string' || q.question.trim() === '' || q.question.length > 500) {
    r.fail(`${at}.question`, `must be a non-blank string of up to 500 characters; got ${shown(q.question)}`);
  }
  const type = q.type ?? 'short_answer';
  if (!(QUESTION_TYPES as readonly unknown[]).includes(type))
    r.fail(`${at}.type`, `must be one of ${QUESTION_TYPES.join(', ')}; got ${shown(type)}`);
  if (q.required !== undefined && typeof q.required !== 'boolean')
    r.fail(`${at}.required`, `must be true or false, got ${shown(q.required)}`);
  const question: Question = { question: String(q.question), type: type as Question['type'], required: q.required === true };
  if (type === 'short_answer') {
    if (q.options !== undefined) r.fail(`${at}.options`, 'is only for single_select and multi_select questions');
  } else {
    question.options = stringList(r, `${at}.options`, q.options);
  }
  return question;
}

function readQuestions(r: FieldReader): Question[] {
  const raw = r.raw('questions');
  const questions: Question[] = [];
  if (raw !== undefined && !Array.isArray(raw)) {
    r.fail('questions', `must be an array of questions; got ${shown(raw)}`);
  } else if (raw) {
    raw.forEach((q: unknown, i) => {
      const at = `questions[${i}]`;
      if (isObject(q)) questions.push(readQuestion(r, at, q));
      else r.fail(at, `must be an object like {"question":"Store hours?","type":"short_answer"}; got ${shown(q)}`);
    });
  }
  return questions;
}

export function readPlaybook(r: FieldReader): PlaybookRecord {
  const id = r.id('playbook');
  const hubId = r.ref('hubId');
  const name = r.name('name');
  const solutions = readSolutions(r);
  const variants = readVariants(r);
  const questions = readQuestions(r);
  return { type: 'playbook', line: r.line, id, hubId, name, solutions, variants, questions };
}
