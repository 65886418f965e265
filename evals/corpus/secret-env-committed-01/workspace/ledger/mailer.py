"""Sends invoice e-mails through SMTP; settings come from the environment (.env in dev)."""

import os
import smtplib
from email.message import EmailMessage

from .models import Invoice


def send_invoice(invoice: Invoice, to: str, pdf: bytes) -> None:
    msg = EmailMessage()
    msg["Subject"] = f"Invoice {invoice.number}"
    msg["From"] = os.environ["SMTP_USER"]
    msg["To"] = to
    msg.set_content(f"Please find invoice {invoice.number} attached.")
    msg.add_attachment(pdf, maintype="application", subtype="pdf", filename=f"{invoice.number}.pdf")
    with smtplib.SMTP(os.environ["SMTP_HOST"], 587) as s:
        s.starttls()
        s.login(os.environ["SMTP_USER"], os.environ["SMTP_PASSWORD"])
        s.send_message(msg)
