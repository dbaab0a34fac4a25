/** One completed Turn as context sees it: user message + committed assistant message. */
export interface HistoryBundle {
  turnId: string;
  user: string;
  assistant: string;
  /** The Turn's position in its Conversation (what a /compact summary is bound to). */
  seq?: number;
}
