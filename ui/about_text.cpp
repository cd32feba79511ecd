#include "about_text.h"

#include <QApplication>

#include "resources/notices.h"

namespace lr::ui {
namespace {

QString qs(std::string_view s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }

}  // namespace

QString aboutText() {
    QString rows;
    for (const Notice & n : third_party_notices()) {
        rows += QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3</td></tr>")
                    .arg(qs(n.component).toHtmlEscaped(), qs(n.licence).toHtmlEscaped(), qs(n.use).toHtmlEscaped());
    }
    return QApplication::tr(
               "<h3>Longread %1</h3><p>Chat with a local LLM about long documents and summarize them, on your own "
               "machine. Its own GGUF engine and a paged KV cache you can watch and tune.</p>"
               "<p>Longread is under the %2 licence. Running on Qt %3.</p>"
               "<p>It contains or links:</p><table cellpadding=\"2\">%4</table>")
        .arg(QApplication::applicationVersion(), qs(kLongreadLicence), QString::fromLatin1(qVersion()), rows);
}

}  // namespace lr::ui
