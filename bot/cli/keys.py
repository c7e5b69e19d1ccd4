"""`gpu-advisor keys create|list|revoke`: API keys for the HTTP API, stored hashed in the conversation store."""

from __future__ import annotations

from typing import Annotated

import typer

from bot.cli.output import console, err_console, print_json, table

keys_app = typer.Typer(
    help="API keys for `gpu-advisor serve` (stored hashed; a key is shown once).", no_args_is_help=True
)


def _store():
    from bot.core.settings import Settings
    from bot.core.store import Store

    return Store(Settings().store_url)


@keys_app.command("create")
def create(
    name: Annotated[str, typer.Argument(help="Who the key is for, e.g. 'sales-shenzhen'.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
    admin: Annotated[bool, typer.Option("--admin", help="May read every caller's conversations.")] = False,
    widget: Annotated[bool, typer.Option("--widget", help="A publishable key for the web chat widget (pk_…).")] = False,
    origin: Annotated[
        list[str] | None,
        typer.Option(
            "--origin", help="A site allowed to embed the widget, e.g. https://shop.example.com (repeatable)."
        ),
    ] = None,
) -> None:
    """Create a key and print it once; from then on every /v1 route needs a key.

    Each key sees only the conversations it started; an --admin key reads all of them.

    Examples: gpu-advisor keys create sales-shenzhen
              gpu-advisor keys create shop --widget --origin https://shop.example.com
    """
    from bot.api import keys

    if origin and not widget:
        err_console.print("[bold red]error:[/] --origin is for widget keys: add --widget")
        raise typer.Exit(2)
    if widget:
        _create_widget(name, origin or [], as_json)
        return
    try:
        info, key = keys.create(_store(), name, admin=admin)
    except ValueError as err:
        err_console.print(f"[bold red]error:[/] {err}")
        raise typer.Exit(2) from None
    if as_json:
        print_json({"id": info.id, "name": info.name, "key": key, "admin": info.admin})
        return
    console.print(f"id:  {info.id}\nkey: {key}", highlight=False)
    console.print("[dim]Store the key now: only its hash is kept. Use it as `Authorization: Bearer <key>`.[/]")


def _create_widget(name: str, origins: list[str], as_json: bool) -> None:
    from bot.api import keys

    try:
        info, key = keys.create_widget(_store(), name, origins)
    except ValueError as err:
        err_console.print(f"[bold red]error:[/] {err}")
        raise typer.Exit(2) from None
    if as_json:
        print_json({"id": info.id, "name": info.name, "key": key, "kind": "widget", "origins": list(info.origins)})
        return
    console.print(f"id:      {info.id}\nkey:     {key}\norigins: {', '.join(info.origins)}", highlight=False)
    console.print(
        "[dim]A publishable key: put it in the page as "
        '<script src="https://HOST/widget.js" data-key="…" defer></script>. '
        "It only opens the widget, only on the origins listed.[/]"
    )


@keys_app.command("list")
def list_(as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False) -> None:
    """List keys (ids and names, never the keys).

    Example: gpu-advisor keys list
    """
    from bot.api import keys

    store = _store()
    rows = keys.list_keys(store)
    widgets = keys.list_widget_keys(store)
    if as_json:
        print_json(
            [
                {
                    "id": k.id,
                    "name": k.name,
                    "created_at": k.created_at.isoformat(),
                    "revoked_at": k.revoked_at.isoformat() if k.revoked_at else None,
                    "admin": k.admin,
                }
                for k in rows
            ]
            + [
                {
                    "id": k.id,
                    "name": k.name,
                    "kind": "widget",
                    "origins": list(k.origins),
                    "created_at": k.created_at.isoformat(),
                    "revoked_at": k.revoked_at.isoformat() if k.revoked_at else None,
                }
                for k in widgets
            ]
        )
        return
    console.print(
        table(
            "API keys",
            ["id", "name", "created", "revoked", "admin"],
            [
                (
                    k.id,
                    k.name,
                    k.created_at.strftime("%Y-%m-%d %H:%M"),
                    k.revoked_at.strftime("%Y-%m-%d %H:%M") if k.revoked_at else None,
                    "yes" if k.admin else None,
                )
                for k in rows
            ],
        )
    )
    if widgets:
        console.print(
            table(
                "Widget keys (publishable)",
                ["id", "name", "origins", "created", "revoked"],
                [
                    (
                        k.id,
                        k.name,
                        " ".join(k.origins),
                        k.created_at.strftime("%Y-%m-%d %H:%M"),
                        k.revoked_at.strftime("%Y-%m-%d %H:%M") if k.revoked_at else None,
                    )
                    for k in widgets
                ],
            )
        )


@keys_app.command("revoke")
def revoke(key_id: Annotated[str, typer.Argument(help="The key's id (from `keys list`).")]) -> None:
    """Revoke a key at once; requests with it get 401.

    Example: gpu-advisor keys revoke 3f2a9c1b0d4e
    """
    from bot.api import keys

    store = _store()
    if not (keys.revoke(store, key_id) or keys.revoke_widget(store, key_id)):
        err_console.print(f"[bold red]error:[/] no active key with id {key_id!r}")
        raise typer.Exit(2)
    console.print(f"revoked {key_id}")
