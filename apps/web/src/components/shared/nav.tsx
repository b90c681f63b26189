// The dashboard's frame and main navigation: the header of every signed-in
// page, and the way back from a page that does not exist.
import Link from "next/link";
import type { ReactNode } from "react";

const NAV = [
  { href: "/", label: "Overview" },
  { href: "/adapters", label: "Adapters" },
  { href: "/environments", label: "Environments" },
  { href: "/jobs", label: "Jobs" },
  { href: "/playground", label: "Playground" },
  { href: "/api-keys", label: "API keys" },
] as const;

/** Whether `href` is the section `pathname` is in (the overview only on "/"). */
const isCurrent = (href: string, pathname: string) =>
  href === "/" ? pathname === "/" : pathname.startsWith(href);

/** The product name, linking home. */
function Brand() {
  return (
    <Link href="/" className="text-lg font-semibold">
      OpenTinker
    </Link>
  );
}

/** The sections, the one `pathname` is in marked current (none on a missing page). */
function MainNav({ pathname }: { pathname: string | null }) {
  return (
    <nav aria-label="Main" className="flex flex-wrap gap-1">
      {NAV.map((item) => {
        const active = pathname !== null && isCurrent(item.href, pathname);
        return (
          <Link
            key={item.href}
            href={item.href}
            aria-current={active ? "page" : undefined}
            className={`rounded px-2 py-1 text-sm ${active ? "bg-blue-50 font-medium text-blue-700" : "text-gray-700 hover:bg-gray-100"}`}
          >
            {item.label}
          </Link>
        );
      })}
    </nav>
  );
}

/** The header (name, sections, then `aside` on the right) over the page's content. */
export function AppFrame({
  pathname,
  aside,
  children,
}: {
  pathname: string | null;
  aside?: ReactNode;
  children: ReactNode;
}) {
  return (
    <div>
      <header className="border-b border-gray-200 bg-white">
        <div className="mx-auto flex max-w-6xl flex-wrap items-center gap-x-6 gap-y-2 px-4 py-3">
          <Brand />
          <MainNav pathname={pathname} />
          {aside && <div className="ml-auto flex items-center gap-3 text-sm">{aside}</div>}
        </div>
      </header>
      <main className="mx-auto max-w-6xl px-4 py-6">{children}</main>
    </div>
  );
}
