"""Read-only admins: rows the admin shows but never edits (the store writes them),
and overview pages that replace a model's change list with one template."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from .params import CleanParamsMixin, clean_request


class ReadOnlyAdmin(CleanParamsMixin, admin.ModelAdmin):
    """No add, change or delete: only ``dispatch_jobs.store`` writes these rows."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class OverviewAdmin(ReadOnlyAdmin):
    """The change list replaced by one page: ``overview_template`` rendered with the
    admin's context, ``overview_title`` and what ``overview_context()`` returns."""

    overview_title: str
    overview_template: str

    def overview_context(self, request: HttpRequest) -> dict[str, Any]:
        """The page's own context (its rows and the like)."""
        raise NotImplementedError

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        clean_request(request)
        own = self.overview_context(request)
        context = {
            **self.admin_site.each_context(request),
            "title": self.overview_title,
            "opts": self.opts,
            **own,
        }
        return TemplateResponse(request, self.overview_template, context)
