/*
 * The docs page's icon: an open book, drawn for this service. Written here, it is part of the
 * bundle, in the executable as the page is; the page links it, so that browsers ask for it rather
 * than for /favicon.ico, which the service does not have (a 404 on every visit).
 */

export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<rect width="32" height="32" rx="6" fill="#24476b"/>
<path d="M5 9.5C8.5 8 12.5 8 15.2 10.2V25c-2.7-2-6.7-2-10.2-.6z" fill="#f4f1ea"/>
<path d="M27 9.5c-3.5-1.5-7.5-1.5-10.2.7V25c2.7-2 6.7-2 10.2-.6z" fill="#dfe8f2"/>
</svg>
`
