/**
 * The hubgrid Admin menu's pages (pure, no Lab imports): both admin plugins
 * add their page commands, each with a rank (the menu's order), whenever
 * they activate; nothing is shown until `open()`, which the admin plugin
 * calls once `GET me` says superadmin or domain admin. A plain user's Lab
 * never builds the menu, so it never shows, not even for an instant.
 */

/** A page command and its place in the menu (lower first). */
export interface IAdminPageItem {
  command: string;
  rank: number;
}

/** The pages added so far; shown (by `show`) on open and as added after. */
export class AdminPageList {
  /** `show`: put these items in the menu and the palette (called only once open). */
  constructor(private readonly show: (items: IAdminPageItem[]) => void) {}

  /** Add a page: shown now if open, else kept for `open`. A command added twice is ignored. */
  add(item: IAdminPageItem): void {
    if (this.known.has(item.command)) {
      return;
    }
    this.known.add(item.command);
    if (this.opened) {
      this.show([item]);
    } else {
      this.waiting.push(item);
    }
  }

  /** The caller is an admin: show every page added so far (by rank), and any added later. */
  open(): void {
    if (this.opened) {
      return;
    }
    this.opened = true;
    const items = [...this.waiting].sort((a, b) => a.rank - b.rank);
    this.waiting = [];
    this.show(items);
  }

  get isOpen(): boolean {
    return this.opened;
  }

  private opened = false;
  private waiting: IAdminPageItem[] = [];
  private readonly known = new Set<string>();
}

/** What every admin tab's caption (its hover text) begins with. */
export const ADMIN_CAPTION = 'hubgrid Admin: ';

/**
 * An admin page's tab: its label is the page's own name ("Users", "Scheduler
 * Queue": with nine admin tabs open each still says which page it is, where
 * "Admin: …" labels all shrank to "Admin: "), its caption says it is an admin
 * page. A label given as "Admin: Users" is read as "Users".
 */
export function adminTabTitle(label: string): { label: string; caption: string } {
  const page = label.replace(/^Admin:\s*/, '').trim() || label;
  return { label: page, caption: ADMIN_CAPTION + page };
}
