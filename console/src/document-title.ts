/** The tab's title: the open emergencies first, so an operator sees them from another tab or the taskbar. */
import { useEffect } from 'preact/hooks';

export const APP_TITLE = 'Emergency console';

/** "(3) Board · Emergency console"; without a count when none is open or the count is unknown. */
export function titleText(page: string, open: number | null): string {
  return `${open ? `(${open}) ` : ''}${page} · ${APP_TITLE}`;
}

/** Keeps document.title on `page` with the open count while the calling component is shown. */
export function useDocumentTitle(page: string, open: number | null): void {
  useEffect(() => {
    document.title = titleText(page, open);
  }, [page, open]);
  useEffect(
    () => () => {
      document.title = APP_TITLE;
    },
    [],
  );
}
